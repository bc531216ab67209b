import { execFileSync } from "node:child_process";
import { waitFor } from "@terse/testkit";
import WebSocket from "ws";

// A leak check needs the memory a process still holds after a full collection: its RSS
// moves by tens of megabytes with V8's heap sizing alone (a 10,000-call run grew it by
// 37 MB without a leak), which hides a leak of a few KB per call. Node opens its
// inspector on SIGUSR1, no flag needed; through it the collection is forced and the
// figures read, in the service's own process as production runs it.

const INSPECTOR = "http://127.0.0.1:9229";

/** The process running the program: tsx runs it in a child of its own. */
function programPid(launcherPid: number): number {
  const children = execFileSync("pgrep", ["-P", String(launcherPid)], { encoding: "utf8" }).trim();
  return children ? Number(children.split("\n")[0]) : launcherPid;
}

/** Bytes the V8 heap and its external buffers hold after a full collection. */
export async function memoryAfterFullGc(launcherPid: number): Promise<number> {
  const pid = programPid(launcherPid);
  process.kill(pid, "SIGUSR1"); // opens the inspector (nothing happens when it is open)
  const url = await waitFor(
    async () => {
      const targets = (await (await fetch(`${INSPECTOR}/json/list`)).json()) as { webSocketDebuggerUrl?: string }[];
      return targets[0]?.webSocketDebuggerUrl;
    },
    { timeoutMs: 10_000, what: `the inspector of process ${pid}` },
  ).catch((err) => {
    throw new Error(`no inspector on ${INSPECTOR} for process ${pid}`, { cause: err });
  });
  const session = await InspectorSession.open(url);
  try {
    const owner = await session.evaluate("process.pid");
    if (owner !== pid) throw new Error(`the inspector on ${INSPECTOR} is process ${owner}'s, not ${pid}'s`);
    // Twice: the first collection may leave objects whose finalizers free more.
    await session.call("HeapProfiler.collectGarbage");
    await session.call("HeapProfiler.collectGarbage");
    return Number(await session.evaluate("(m => m.heapUsed + m.external)(process.memoryUsage())"));
  } finally {
    session.close();
  }
}

class InspectorSession {
  private nextId = 1;
  private readonly pending = new Map<number, (reply: { result?: unknown; error?: unknown }) => void>();

  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const reply = JSON.parse(String(data)) as { id?: number; result?: unknown; error?: unknown };
      if (reply.id !== undefined) this.pending.get(reply.id)?.(reply);
    });
  }

  static open(url: string): Promise<InspectorSession> {
    const ws = new WebSocket(url);
    return new Promise((resolve, reject) => {
      ws.once("open", () => resolve(new InspectorSession(ws)));
      ws.once("error", reject);
    });
  }

  call(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, (reply) => {
        this.pending.delete(id);
        if (reply.error) reject(new Error(`${method}: ${JSON.stringify(reply.error)}`));
        else resolve(reply.result);
      });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async evaluate(expression: string): Promise<unknown> {
    const out = (await this.call("Runtime.evaluate", { expression, returnByValue: true })) as {
      result: { value?: unknown };
    };
    return out.result.value;
  }

  close(): void {
    this.ws.close();
  }
}
