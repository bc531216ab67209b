import { expect } from "chai";
import { type ComposeService, composeEnv, dockerTargets, envProblems, interpolate, loadCompose } from "../src/index.ts";

// docker-compose.yml against the services' configuration schemas and the Dockerfile.
// (No Docker engine runs here, and `docker compose` is not installed: the file is read
// as compose reads it, YAML merge keys and ${...} interpolation included.)

const SECRETS = { JWT_SECRET: "j".repeat(40), INTERNAL_GRPC_TOKEN: "t".repeat(24) };
const TERSE_SERVICES = ["migrate", "control-plane", "data-plane", "metering-worker"] as const;

describe("docker-compose.yml", () => {
  const compose = loadCompose();
  const targets = dockerTargets();
  const service = (name: string): ComposeService => {
    const s = compose.services[name];
    if (!s) throw new Error(`no service ${name}`);
    return s;
  };

  it("runs Postgres, Redis, the migration and the three services", () => {
    expect(Object.keys(compose.services)).to.have.members(["postgres", "redis", ...TERSE_SERVICES]);
    expect(Object.keys(compose.volumes ?? {})).to.include.members(["postgres-data", "redis-data"]);
    for (const name of Object.keys(compose.services)) {
      expect(service(name).healthcheck ?? name === "migrate", `${name} health check`).to.be.ok;
    }
  });

  for (const name of TERSE_SERVICES) {
    it(`${name}: built from a Dockerfile target, with exactly the variables its service reads, all valid`, () => {
      const s = service(name);
      const target = s.build?.target ?? "";
      expect(targets.has(target), `Dockerfile target ${target}`).to.equal(true);
      expect(envProblems(name, composeEnv(s, SECRETS))).to.deep.equal([]);
    });
  }

  it("would catch a typo, a missing secret and a bad value (the check itself)", () => {
    expect(envProblems("data-plane", { DATA_PLANE_PROT: "8081" })).to.deep.equal([
      "DATA_PLANE_PROT is set but data-plane does not read it",
    ]);
    expect(envProblems("metering-worker", {})[0]).to.equal("INTERNAL_GRPC_TOKEN is required and not set");
    expect(envProblems("data-plane", { DATA_PLANE_PORT: "80a" })[0]).to.match(/DATA_PLANE_PORT: expected a port/);
  });

  it("requires the two secrets from .env and never defaults them", () => {
    for (const name of ["control-plane", "metering-worker"]) {
      expect(() => composeEnv(service(name), {}), name).to.throw(/INTERNAL_GRPC_TOKEN|JWT_SECRET/);
      expect(() => composeEnv(service(name), { ...SECRETS, INTERNAL_GRPC_TOKEN: "" }), name).to.throw(
        /INTERNAL_GRPC_TOKEN/,
      );
    }
    // biome-ignore lint/suspicious/noTemplateCurlyInString: compose syntax, not a template
    expect(interpolate("${A:-x}/${B-y}/${C}", { A: "", B: "" })).to.equal("x//");
  });

  it("runs the migration once before the control plane, which does not migrate itself", () => {
    const migrate = service("migrate");
    expect(migrate.command).to.deep.equal(["node", "services/control-plane/dist/migrate.mjs"]);
    expect(migrate.image).to.equal(service("control-plane").image);
    expect(service("control-plane").depends_on?.migrate?.condition).to.equal("service_completed_successfully");
    expect(composeEnv(service("control-plane"), SECRETS).MIGRATE_ON_START).to.equal("false");
  });

  it("points every address at a compose service on the port that service listens on", () => {
    const cp = composeEnv(service("control-plane"), SECRETS);
    for (const name of ["control-plane", "data-plane", "metering-worker"]) {
      expect(new URL(composeEnv(service(name), SECRETS).REDIS_URL ?? "").hostname).to.equal("redis");
    }
    expect(new URL(cp.DATABASE_URL ?? "").hostname).to.equal("postgres");
    expect(composeEnv(service("metering-worker"), SECRETS).CONTROL_PLANE_GRPC_URL).to.equal(
      `control-plane:${cp.GRPC_PORT}`,
    );
  });

  it("has each service listen on every interface of its container", () => {
    for (const name of ["control-plane", "data-plane", "metering-worker"]) {
      expect(composeEnv(service(name), SECRETS).BIND_HOST, name).to.equal("0.0.0.0");
    }
  });

  it("health-checks each service on its own configured port, and publishes that port", () => {
    const portVariable = {
      "control-plane": "CONTROL_PLANE_PORT",
      "data-plane": "DATA_PLANE_PORT",
      "metering-worker": "METRICS_PORT",
    };
    for (const [name, variable] of Object.entries(portVariable)) {
      const s = service(name);
      const env = composeEnv(s, SECRETS);
      expect(s.healthcheck?.test, name).to.deep.equal(["CMD", "node", "probe.mjs", variable, "/readyz"]);
      for (const mapping of s.ports ?? []) {
        expect(interpolate(mapping, {}).split(":").at(-1), `${name} port`).to.equal(env[variable]);
      }
    }
    // --scale data-plane=N needs a host port range, not one fixed port.
    expect(interpolate(service("data-plane").ports?.[0] ?? "", {})).to.match(/^\d+-\d+:\d+$/);
  });
});

describe("Dockerfile", () => {
  const targets = dockerTargets();

  it("has one runtime target per service, running its bundle as the unprivileged user", () => {
    for (const name of ["control-plane", "data-plane", "metering-worker"]) {
      const target = targets.get(name);
      expect(target?.base, name).to.equal("runtime");
      // The data plane runs with a larger young generation (its per-request garbage): a node flag.
      const flags = name === "data-plane" ? ["--min-semi-space-size=16"] : [];
      expect(target?.cmd, name).to.deep.equal(["node", ...flags, `services/${name}/dist/main.mjs`]);
      // Only the service's runtime tree comes in: no sources, no node_modules of the build.
      expect(target?.copies, name).to.deep.equal([`COPY --from=build --chown=root:root /out/${name} /app`]);
    }
    expect(targets.get("runtime")?.user).to.equal("node");
  });
});
