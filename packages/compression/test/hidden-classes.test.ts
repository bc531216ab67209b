import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { REPO_ROOT } from "@terse/testkit";
import { expect } from "chai";

// The proxy builds these objects for every request. Built as a spread followed by a field
// the source lacks, each came out of V8 with a hidden class of its own, and every later
// read of it missed its inline caches: about a tenth of the proxy's CPU per request
// (docs/benchmarks.md). V8's own check (%HaveSameMap) tells, in a process of its own.
describe("objects built per request share their hidden classes", () => {
  it("the key's settings, the compressed requests of every format, the recall tool's declaration, a stream's body, observations", () => {
    const fixture = join(REPO_ROOT, "packages/compression/test/fixtures/hidden-classes.ts");
    const out = execFileSync(process.execPath, ["--allow-natives-syntax", "--import", "tsx", fixture], {
      cwd: join(REPO_ROOT, "packages/compression"),
      encoding: "utf8",
    });
    const changes = JSON.parse(out) as Record<string, number>;
    expect(Object.keys(changes)).to.have.length.above(15);
    // A handful while V8 settles a shape (a field's representation generalised once); a
    // class per object would be ~500.
    for (const [built, count] of Object.entries(changes)) expect(count, built).to.be.at.most(3);
  });
});
