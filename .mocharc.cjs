// `npx mocha <file or glob>` runs just those tests; plain `mocha` (npm test) runs them all.
// (Mocha adds command-line specs to a configured `spec`, so the list is left out when
// the command line names tests.)
const ALL = ["packages/*/test/**/*.test.ts", "services/*/test/**/*.test.ts"];
const namesTests = process.argv.slice(2).some((arg) => /\.test\.ts$|\/test\//.test(arg));

module.exports = {
  "node-option": ["import=tsx"],
  spec: namesTests ? [] : ALL,
  timeout: 30000,
  exit: true,
  reporter: "spec",
};
