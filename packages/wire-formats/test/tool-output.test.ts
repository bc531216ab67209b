import { expect } from "chai";
import { splitToolOutput } from "../src/tool-output.ts";

// A tool result whose output follows a report of the run (Codex CLI's, as Codex 0.169 sends
// it to the fake provider in packages/agent-clis) splits into the report and the output;
// anything else has no report.

const OUTPUT = '{\n  "items": [1, 2, 3]\n}\n';

/** Each report before OUTPUT splits from it, and the two join back. */
function expectSplits(reports: readonly string[]): void {
  for (const report of reports)
    expect(splitToolOutput(report + OUTPUT), report).to.deep.equal({ report, output: OUTPUT });
}

describe("a tool's report before its output", () => {
  it("is split from the output in both of Codex CLI's forms, and the parts join back", () => {
    const reports = [
      "Chunk ID: a848c9\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 12\nOutput:\n",
      "Chunk ID: 0f31aa\nWall time: 10.0021 seconds\nProcess running with session ID 3\nOriginal token count: 900\nOutput:\n",
      "Exit code: 1\nWall time: 0.5 seconds\nTotal output lines: 4012\nOutput:\n",
    ];
    expectSplits(reports);
  });

  it("is split from the output in Cline's and Roo Code's forms, and the parts join back", () => {
    const reports = [
      "[execute_command for 'npm test'] Result:\nCommand executed successfully (exit code 0).\nOutput:\n",
      "[execute_command for 'cd app &&\nnpm test'] Result:\nCommand failed with exit code 2.\nOutput:\n",
      "[execute_command for 'npm test'] Result:\nCommand executed.\nOutput:\n",
      "[execute_command for 'sleep 9'] Result:\nCommand terminated by signal SIGTERM.\nOutput:\n",
      "Command executed in terminal  within working directory '/ws'. Exit code: 0\nOutput:\n",
      "Command executed in terminal  within working directory '/ws'. Command execution was not successful, inspect the cause and adjust as needed.\nExit code: 1\nOutput:\n",
      "Command executed in '/ws'. Exit code: 0\nOutput:\n",
      // Cline's heading alone: a read's text (or a listing, a search) follows it.
      "[read_file for 'src/app.ts'] Result:\n",
      "[search_files for 'def handle' in '*.py'] Result:\n",
    ];
    expectSplits(reports);
    // The heading, then a report that never says where the output starts: the rest is output.
    const text = `[execute_command for 'make'] Result:\nCommand executed.\n${OUTPUT}`;
    expect(splitToolOutput(text)).to.deep.equal({
      report: "[execute_command for 'make'] Result:\n",
      output: `Command executed.\n${OUTPUT}`,
    });
  });

  it("is none where the text does not start with one", () => {
    const texts = [
      OUTPUT,
      `Output:\n${OUTPUT}`,
      `Exit code: 0\nWall time: 0.5 seconds\n${OUTPUT}`,
      `Exit code: 0\n\nOutput:\n${OUTPUT}`,
      `${"Status: ok\n".repeat(9)}Output:\n${OUTPUT}`,
      "Exit code: 0\nOutput:",
      "error: cannot open file\nOutput:\nnothing",
      `[read_file for 'src/app.ts'] Result: ${OUTPUT}`,
      `[Read the file] Result:\n${OUTPUT}`,
      `Command executed in terminal and more.\nOutput:\n${OUTPUT}`,
    ];
    for (const text of texts) expect(splitToolOutput(text), JSON.stringify(text)).to.equal(undefined);
  });
});
