import { expect } from "chai";
import { splitToolOutput } from "../src/tool-output.ts";

// A tool result whose output follows a report of the run (Codex CLI's, as Codex 0.169 sends
// it to the fake provider in packages/agent-clis) splits into the report and the output;
// anything else has no report.

const OUTPUT = '{\n  "items": [1, 2, 3]\n}\n';

/** Each report before OUTPUT splits from it, and the two join back. */
function expectSplits(reports: readonly string[]): void {
  for (const report of reports)
    expect(splitToolOutput(report + OUTPUT), report).to.deep.equal({ report, output: OUTPUT, trailer: "" });
}

describe("a tool's report before its output and an agent's trailer after it", () => {
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
      trailer: "",
    });
  });

  it("what OpenHands, Claude Code, OpenCode, Goose and Continue put around an output is split off, and the parts join back", () => {
    const output = '{\n  "items": [1, 2, 3]\n}';
    const trailers = [
      "\n[The command completed with exit code 0.]",
      "\n[The command completed with exit code 1.]\n[Current working directory: /workspace/django__django__4.0]\n[Python interpreter: /opt/miniconda3/envs/testbed/bin/python]\n[Command finished with exit code 1]",
      "\n[The command timed out after 120 seconds. You may wait longer to see additional output by sending empty command '']",
      "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it would be considered malware.\n</system-reminder>\n",
      "\n\n<system-reminder>\nOne.\n</system-reminder>\n<system-reminder>\nTwo.\n</system-reminder>",
      "\n[The command completed with exit code 0.]\n\n<system-reminder>\nBoth.\n</system-reminder>",
      "\n\nCommand exited with code 2",
      "\n[Status: Command failed with exit code 1]",
      "\n[Status: Command completed]\n",
      "\n\n<bash_metadata>\nbash tool terminated command after exceeding timeout 120000 ms\n</bash_metadata>",
      "\n\n<bash_metadata>\nbash tool truncated output as it exceeded 30000 char limit\n</bash_metadata>\n",
    ];
    for (const trailer of trailers)
      expect(splitToolOutput(output + trailer), trailer).to.deep.equal({ report: "", output, trailer });
    // Claude Code's exit code of a command that failed, before its output and its reminder.
    const exit = "Exit code 3\n";
    const reminder = "\n\n<system-reminder>\n<total_tokens>14999982 tokens left</total_tokens>\n</system-reminder>";
    expect(splitToolOutput(exit + output + reminder)).to.deep.equal({ report: exit, output, trailer: reminder });
    // OpenCode's note before the tail of an output it cut.
    const cut =
      "...output truncated...\n\nFull output saved to: /home/u/.local/share/opencode/tool-output/tool_1a2b\n\n";
    expect(splitToolOutput(cut + output)).to.deep.equal({ report: cut, output, trailer: "" });
    // Continue's CLI: its note before the tail of an output it cut, its line before a file read.
    for (const report of ["(previous 29001 lines truncated)\n\n", "Content of /repo/package.json:\n"])
      expect(splitToolOutput(report + output), report).to.deep.equal({ report, output, trailer: "" });
    // A report and a trailer around one output.
    const report = "Exit code: 0\nWall time: 0.5 seconds\nOutput:\n";
    const trailer = "\n[The command completed with exit code 0.]";
    expect(splitToolOutput(report + output + trailer)).to.deep.equal({ report, output, trailer });
  });

  it("Gemini CLI's shell result: its report on the output's first line, its sections after it", () => {
    const output = '{\n  "items": [1, 2, 3]\n}';
    const cases: [string, string][] = [
      ["Output: ", "\nProcess Group PGID: 2075"],
      [
        "Output: ",
        "\nError: spawn failed\nExit Code: 1\nSignal: SIGTERM\nBackground PIDs: 12, 13\nProcess Group PGID: 2075",
      ],
      ["Output: ", ""],
      [
        "Command: npm test\nDirectory: (root)\nOutput: ",
        "\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 27296",
      ],
      ["Command: ls\nDirectory: src\nStdout: ", "\nStderr: (empty)\nError: (none)\nExit Code: 0\nSignal: (none)"],
    ];
    for (const [report, trailer] of cases)
      expect(splitToolOutput(report + output + trailer), report + trailer).to.deep.equal({ report, output, trailer });
    // Gemini CLI 0.61 wraps it in its envelope of outside content: the tags go with the report and the trailer.
    const open = "<untrusted_context>\n";
    const close = "\n</untrusted_context>";
    const pgid = "\nProcess Group PGID: 11406";
    expect(splitToolOutput(`${open}Output: ${output}${pgid}${close}`)).to.deep.equal({
      report: `${open}Output: `,
      output,
      trailer: pgid + close,
    });
    // Any other output in it (a fetched page) is all output.
    expect(splitToolOutput(`${open}${output}${close}\n`)).to.deep.equal({
      report: open,
      output,
      trailer: `${close}\n`,
    });
    expect(splitToolOutput(`${open}${output}`)).to.equal(undefined);
    // Lines in a section's form inside the output are output.
    const inside = `Output: Exit Code: 3\n${output}\nProcess Group PGID: 1`;
    expect(splitToolOutput(inside)?.output).to.equal(`Exit Code: 3\n${output}`);
    // A text that only mentions an output is none.
    expect(splitToolOutput(`Outputs: ${output}`)).to.equal(undefined);
    expect(splitToolOutput(`Command: ls\nOutput: ${output}`)).to.equal(undefined);
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
    // Nor where what looks like a trailer is not at the very end, or not on lines of its own.
    texts.push(
      `${OUTPUT}[The command completed with exit code 0.]\nmore output\n`,
      `${OUTPUT}see [The command completed with exit code 0.]`,
      `${OUTPUT}Command exited with code 2`,
      `${OUTPUT}text<system-reminder>\nNot on its own line.\n</system-reminder>`,
      `${OUTPUT}</system-reminder>`,
      `${OUTPUT}text<bash_metadata>\nNot on its own line.\n</bash_metadata>`,
      `...output truncated...\nFull output saved to: /tmp/x\n\n${OUTPUT}`,
      `Exit code three\n${OUTPUT}`,
      `Exit code 3 and more\n${OUTPUT}`,
      `...output truncated...\n\nFull output saved to: /tmp/x\n${OUTPUT}`,
      `(previous 12 lines truncated)\n${OUTPUT}`,
      `(previous lines truncated)\n\n${OUTPUT}`,
      `Content of the release:${OUTPUT}`,
      `Content of\n${OUTPUT}`,
    );
    for (const text of texts) expect(splitToolOutput(text), JSON.stringify(text)).to.equal(undefined);
  });

  it("holds what a person typed in the output's place, or after it, in the trailer: kept as sent", () => {
    const denial =
      "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). To tell you how to proceed, the user said:\nkeep it";
    expect(splitToolOutput(denial)).to.deep.equal({ report: "", output: "", trailer: denial });
    const answers = 'User has answered your questions: "Which?"="the old one". You can now continue.';
    expect(splitToolOutput(answers)).to.deep.equal({ report: "", output: "", trailer: answers });
    const heading = "[execute_command for 'rm -rf cache'] Result:\n";
    const cline =
      "The user denied this operation and provided the following feedback:\n<feedback>\nnot yet\n</feedback>";
    expect(splitToolOutput(heading + cline)).to.deep.equal({ report: heading, output: "", trailer: cline });
    const report = "[execute_command for 'npm test'] Result:\nCommand executed.\nOutput:\n";
    const feedback = "\n\nThe user provided the following feedback:\n<feedback>\nstop, it hangs\n</feedback>";
    expect(splitToolOutput(report + OUTPUT + feedback)).to.deep.equal({ report, output: OUTPUT, trailer: feedback });
    expect(splitToolOutput(OUTPUT + feedback)).to.deep.equal({ report: "", output: OUTPUT, trailer: feedback });
    // Gemini CLI: the text the person wrote in the model's place, after the line that says the write was done.
    const done = "Successfully created and wrote to new file: /ws/app.ts.";
    const modified = " User modified the `content` to be: export const answer = 42;\n";
    expect(splitToolOutput(done + modified)).to.deep.equal({ report: "", output: done, trailer: modified });
    expect(splitToolOutput(`cat notes.txt\n${modified}`)).to.equal(undefined);
    // Only at the start, or the feedback heading after an output: a command's output that quotes them is output.
    const quoted = `grep -r denied logs/\n${cline}`;
    expect(splitToolOutput(quoted)).to.equal(undefined);
  });
});
