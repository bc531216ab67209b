import { readFileSync } from "node:fs";
import { join } from "node:path";
import { controlPlaneEnv, dataPlaneEnv, loadConfig, meteringWorkerEnv } from "@terse/config";
import { REPO_ROOT } from "@terse/testkit";
import { parse, parseAllDocuments } from "yaml";
import { z } from "zod";

// The deployment files read as data, so tests can hold them against the services' real
// configuration schemas (packages/config) and run what they describe.

export type Env = Record<string, string>;

/** The schema of the variables each container command reads. */
export const SCHEMAS: Record<string, z.ZodObject> = {
  "control-plane": controlPlaneEnv,
  "data-plane": dataPlaneEnv,
  "metering-worker": meteringWorkerEnv,
  // packages/db/src/cli.ts reads only this.
  migrate: z.object({ DATABASE_URL: z.string().url() }),
};

/** Variables a schema declares, and those without a default that must be set. */
export function variablesOf(schema: z.ZodObject): { all: string[]; required: string[] } {
  const all = Object.keys(schema.shape);
  const required = all.filter((k) => !(schema.shape[k] as z.ZodType).safeParse(undefined).success);
  return { all, required };
}

/**
 * What is wrong with the environment a deployment file gives `service`: variables the
 * service does not read (a typo, or a leftover), required ones missing, and a value its
 * schema refuses. Empty when the service would start with it.
 */
export function envProblems(service: string, env: Env): string[] {
  const schema = SCHEMAS[service];
  if (!schema) return [`no configuration schema for ${service}`];
  const { all, required } = variablesOf(schema);
  const problems = [
    ...Object.keys(env)
      .filter((k) => !all.includes(k))
      .map((k) => `${k} is set but ${service} does not read it`),
    ...required.filter((k) => !(k in env)).map((k) => `${k} is required and not set`),
  ];
  try {
    loadConfig(schema, env);
  } catch (err) {
    problems.push((err as Error).message);
  }
  return problems;
}

// --- Dockerfile ---------------------------------------------------------------------

export interface DockerTarget {
  name: string;
  /** The image or stage it starts from. */
  base: string;
  user: string | undefined;
  cmd: string[] | undefined;
  copies: string[];
}

/** The stages of the Dockerfile by name, with their CMD (exec form) and COPY lines. */
export function dockerTargets(file = join(REPO_ROOT, "Dockerfile")): Map<string, DockerTarget> {
  const targets = new Map<string, DockerTarget>();
  let current: DockerTarget | undefined;
  const lines = readFileSync(file, "utf8").replace(/\\\n/g, " ").split("\n");
  for (const line of lines) {
    const from = line.match(/^FROM\s+(\S+)\s+AS\s+(\S+)/i);
    if (from?.[1] && from[2]) {
      current = { name: from[2], base: from[1], user: undefined, cmd: undefined, copies: [] };
      targets.set(current.name, current);
    } else if (current && /^USER\s/i.test(line)) {
      current.user = line.replace(/^USER\s+/i, "").trim();
    } else if (current && /^CMD\s+\[/i.test(line)) {
      current.cmd = JSON.parse(line.replace(/^CMD\s+/i, "")) as string[];
    } else if (current && /^COPY\s/i.test(line)) {
      current.copies.push(line.trim());
    }
  }
  return targets;
}

// --- docker-compose.yml --------------------------------------------------------------

export interface ComposeService {
  image?: string;
  build?: { context: string; target: string };
  command?: string[];
  environment?: Record<string, string | number | boolean>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
}

export function loadCompose(file = join(REPO_ROOT, "docker-compose.yml")): {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
} {
  // merge: YAML 1.1 `<<` keys, as compose reads them.
  return parse(readFileSync(file, "utf8"), { merge: true });
}

/**
 * Compose's variable interpolation: `${VAR}`, `${VAR:-default}`, `${VAR-default}` and
 * `${VAR:?message}` (an error when unset or empty), against the project's `.env`.
 */
export function interpolate(value: string, dotEnv: Env): string {
  return value.replace(/\$\{(\w+)(?:(:?[-?])([^}]*))?\}/g, (_m, name: string, op?: string, arg?: string) => {
    const set = dotEnv[name];
    if (op === ":?" || op === "?") {
      if (set === undefined || (op === ":?" && set === "")) throw new Error(`${name}: ${arg}`);
      return set;
    }
    if (op === ":-") return set === undefined || set === "" ? (arg ?? "") : set;
    if (op === "-") return set ?? arg ?? "";
    return set ?? "";
  });
}

/** A compose service's container environment after interpolation. */
export function composeEnv(service: ComposeService, dotEnv: Env): Env {
  return Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v), dotEnv)]),
  );
}

// --- deploy/k8s ----------------------------------------------------------------------

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  // biome-ignore lint/suspicious/noExplicitAny: manifests are free-form; tests assert their shape
  spec?: any;
  data?: Env;
  stringData?: Env;
}

export const K8S_DIR = join(REPO_ROOT, "deploy", "k8s");

/** Every object of the resources listed by deploy/k8s/kustomization.yaml. */
export function loadK8s(dir = K8S_DIR): K8sObject[] {
  const kustomization = parse(readFileSync(join(dir, "kustomization.yaml"), "utf8")) as { resources: string[] };
  return kustomization.resources.flatMap((file) =>
    parseAllDocuments(readFileSync(join(dir, file), "utf8"))
      .map((doc) => doc.toJSON() as K8sObject | null)
      .filter((o): o is K8sObject => o !== null),
  );
}

export function findObject(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in deploy/k8s`);
  return found;
}

interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: { name: string; containerPort: number }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  readinessProbe?: { httpGet?: { path: string; port: string | number } };
  livenessProbe?: { httpGet?: { path: string; port: string | number } };
  resources?: { requests?: Env; limits?: Env };
}

export function containersOf(deployment: K8sObject): { init: Container[]; main: Container[] } {
  const pod = deployment.spec.template.spec;
  return { init: pod.initContainers ?? [], main: pod.containers ?? [] };
}

/** The environment a container gets: its ConfigMaps, then its own entries (secrets resolved). */
export function containerEnv(objects: K8sObject[], container: Container): Env {
  const env: Env = {};
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, findObject(objects, "ConfigMap", from.configMapRef.name).data);
    if (from.secretRef) Object.assign(env, findObject(objects, "Secret", from.secretRef.name).stringData);
  }
  for (const entry of container.env ?? []) {
    const ref = entry.valueFrom?.secretKeyRef;
    if (ref) {
      const value = findObject(objects, "Secret", ref.name).stringData?.[ref.key];
      if (value === undefined) throw new Error(`${container.name}: secret ${ref.name} has no key ${ref.key}`);
      env[entry.name] = value;
    } else {
      env[entry.name] = entry.value ?? "";
    }
  }
  return env;
}

/** The number behind a probe's or service's port, given by name or number. */
export function containerPort(container: Container, port: string | number): number | undefined {
  if (typeof port === "number") return port;
  return container.ports?.find((p) => p.name === port)?.containerPort;
}
