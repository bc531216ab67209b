import { expect } from "chai";
import { splitToolOutput } from "../src/tool-output.ts";

// A tool result whose output follows a report of the run (Codex CLI's, as Codex 0.169 sends
// it to the fake provider in packages/agent-clis) splits into the report and the output;
// anything else has no report.

const OUTPUT = '{\n  "items": [1, 2, 3]\n}\n';

describe("a tool's report before its output", () => {
  it("is split from the output in both of Codex CLI's forms, and the parts join back", () => {
    const reports = [
      "Chunk ID: a848c9\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 12\nOutput:\n",
      "Chunk ID: 0f31aa\nWall time: 10.0021 seconds\nProcess running with session ID 3\nOriginal token count: 900\nOutput:\n",
      "Exit code: 1\nWall time: 0.5 seconds\nTotal output lines: 4012\nOutput:\n",
    ];
    for (const report of reports) {
      const split = splitToolOutput(report + OUTPUT);
      expect(split, report).to.deep.equal({ report, output: OUTPUT });
    }
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
    ];
    for (const text of texts) expect(splitToolOutput(text), JSON.stringify(text)).to.equal(undefined);
  });
});
