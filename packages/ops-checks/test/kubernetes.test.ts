import { execFileSync } from "node:child_process";
import { expect } from "chai";
import { parseAllDocuments } from "yaml";
import {
  containerEnv,
  containerPort,
  containersOf,
  dockerTargets,
  envProblems,
  findObject,
  K8S_DIR,
  type K8sObject,
  loadK8s,
} from "../src/index.ts";

// deploy/k8s against the services' configuration schemas, the ports and probes they
// serve, and the Dockerfile's commands.

const SERVICES = ["control-plane", "data-plane", "metering-worker"] as const;
const PORT_VARIABLE = {
  "control-plane": "CONTROL_PLANE_PORT",
  "data-plane": "DATA_PLANE_PORT",
  "metering-worker": "METRICS_PORT",
};
const LABEL = "app.kubernetes.io/name";

function hasKubectl(): boolean {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

describe("Kubernetes manifests (deploy/k8s)", () => {
  const objects = loadK8s();
  const deployment = (name: string) => findObject(objects, "Deployment", name);
  const mainContainer = (name: string) => {
    const c = containersOf(deployment(name)).main[0];
    if (!c) throw new Error(`${name} has no container`);
    return c;
  };

  it("builds with kustomize into the same objects", function () {
    // kubectl is on this machine kind; elsewhere the structural checks below still run.
    if (!hasKubectl()) this.skip();
    const rendered = execFileSync("kubectl", ["kustomize", K8S_DIR]).toString();
    const kinds = parseAllDocuments(rendered).map((d) => {
      const o = d.toJSON() as K8sObject;
      return `${o.kind}/${o.metadata.name}`;
    });
    expect(kinds).to.have.members(objects.map((o) => `${o.kind}/${o.metadata.name}`));
  });

  for (const name of SERVICES) {
    it(`${name}: the Dockerfile's command, every variable it reads and nothing else, all valid`, () => {
      const c = mainContainer(name);
      expect(c.image).to.equal(`terse/${name}`);
      expect(c.command).to.deep.equal(dockerTargets().get(name)?.cmd);
      expect(envProblems(name, containerEnv(objects, c))).to.deep.equal([]);
      // The pod's address, not 127.0.0.1: probes and the Service reach it there.
      expect(containerEnv(objects, c).BIND_HOST).to.equal("0.0.0.0");
    });

    it(`${name}: readiness on /readyz and liveness on /healthz, on the port it serves`, () => {
      const c = mainContainer(name);
      const port = Number(containerEnv(objects, c)[PORT_VARIABLE[name]]);
      expect(c.readinessProbe?.httpGet?.path).to.equal("/readyz");
      expect(c.livenessProbe?.httpGet?.path).to.equal("/healthz");
      expect(containerPort(c, c.readinessProbe?.httpGet?.port ?? "")).to.equal(port);
      expect(containerPort(c, c.livenessProbe?.httpGet?.port ?? "")).to.equal(port);
      const service = findObject(objects, "Service", name);
      expect(service.spec.selector).to.deep.equal({ [LABEL]: name });
      for (const p of service.spec.ports as { targetPort: string }[]) {
        expect(containerPort(c, p.targetPort), `${name} service port ${p.targetPort}`).to.be.a("number");
      }
    });

    it(`${name}: resource requests and limits, non-root, and time to drain on SIGTERM`, () => {
      const d = deployment(name);
      const pod = d.spec.template.spec;
      expect(d.spec.selector.matchLabels).to.deep.equal({ [LABEL]: name });
      expect(d.spec.template.metadata.labels[LABEL]).to.equal(name);
      expect(pod.securityContext.runAsNonRoot).to.equal(true);
      const { init, main } = containersOf(d);
      for (const c of [...init, ...main]) {
        for (const kind of ["requests", "limits"] as const) {
          expect(c.resources?.[kind], `${c.name} ${kind}`).to.have.keys(["cpu", "memory"]);
        }
      }
      const env = containerEnv(objects, mainContainer(name));
      const needMs = Number(env.SHUTDOWN_DRAIN_DELAY_MS ?? 0) + Number(env.SHUTDOWN_GRACE_MS ?? 25_000);
      expect(pod.terminationGracePeriodSeconds * 1000).to.be.greaterThan(needMs);
    });
  }

  it("migrates in an init container before the control plane starts", () => {
    const [migrate] = containersOf(deployment("control-plane")).init;
    expect(migrate?.command).to.deep.equal(["node", "services/control-plane/dist/migrate.mjs"]);
    expect(migrate?.image).to.equal("terse/control-plane");
    expect(envProblems("migrate", migrate ? containerEnv(objects, migrate) : {})).to.deep.equal([]);
    expect(containerEnv(objects, mainContainer("control-plane")).MIGRATE_ON_START).to.equal("false");
  });

  it("keeps JWT_SECRET, the internal gRPC token and the database URL in a Secret, never in a ConfigMap", () => {
    const secret = findObject(objects, "Secret", "terse-secrets");
    expect(Object.keys(secret.stringData ?? {})).to.have.members(["JWT_SECRET", "INTERNAL_GRPC_TOKEN", "DATABASE_URL"]);
    for (const map of objects.filter((o) => o.kind === "ConfigMap")) {
      for (const key of ["JWT_SECRET", "INTERNAL_GRPC_TOKEN", "DATABASE_URL"]) {
        expect(map.data ?? {}, map.metadata.name).to.not.have.property(key);
      }
    }
  });

  it("points the worker at the control plane's gRPC service port", () => {
    const grpcUrl = containerEnv(objects, mainContainer("metering-worker")).CONTROL_PLANE_GRPC_URL;
    const grpcPort = Number(containerEnv(objects, mainContainer("control-plane")).GRPC_PORT);
    const service = findObject(objects, "Service", "control-plane");
    const port = (service.spec.ports as { name: string; port: number }[]).find((p) => p.name === "grpc");
    expect(grpcUrl).to.equal(`control-plane:${port?.port}`);
    expect(containerPort(mainContainer("control-plane"), "grpc")).to.equal(grpcPort);
  });

  it("autoscales the data plane and bounds its disruptions", () => {
    const hpa = findObject(objects, "HorizontalPodAutoscaler", "data-plane");
    expect(hpa.spec.scaleTargetRef).to.include({ kind: "Deployment", name: "data-plane" });
    expect(hpa.spec.minReplicas).to.be.at.least(2);
    expect(hpa.spec.maxReplicas).to.be.greaterThan(hpa.spec.minReplicas);
    expect(deployment("data-plane").spec.replicas, "replicas belong to the autoscaler").to.equal(undefined);
    const pdb = findObject(objects, "PodDisruptionBudget", "data-plane");
    expect(pdb.spec.selector.matchLabels).to.deep.equal({ [LABEL]: "data-plane" });
  });

  it("lets only the metering worker reach the control plane's gRPC port", () => {
    const policies = objects.filter(
      (o) => o.kind === "NetworkPolicy" && o.spec.podSelector?.matchLabels?.[LABEL] === "control-plane",
    );
    expect(policies).to.have.length(1);
    const grpcPort = Number(containerEnv(objects, mainContainer("control-plane")).GRPC_PORT);
    const rules = (policies[0]?.spec.ingress ?? []) as { from?: unknown[]; ports?: { port: number }[] }[];
    const reaching = rules.filter((r) => !r.ports || r.ports.some((p) => p.port === grpcPort));
    expect(reaching).to.have.length(1);
    expect(reaching[0]?.from).to.deep.equal([{ podSelector: { matchLabels: { [LABEL]: "metering-worker" } } }]);
    expect(policies[0]?.spec.policyTypes).to.include("Ingress");
  });
});
