import { expect } from "chai";
import { RecentWrites } from "../src/infra/recent-writes.ts";

describe("recent writes", () => {
  it("is due once per interval per id, again once forgotten, and forgets the id written longest ago past its bound", () => {
    const w = new RecentWrites(1_000, 2);
    expect([w.due("a", 0), w.due("a", 999), w.due("a", 1_000)]).to.deep.equal([true, false, true]);
    w.forget("a");
    expect(w.due("a", 1_001)).to.equal(true);
    expect([w.due("b", 1_002), w.due("c", 1_003)]).to.deep.equal([true, true]); // "a" forgotten: the bound is 2
    expect([w.due("a", 1_004), w.due("c", 1_005)]).to.deep.equal([true, false]);
  });
});
