/**
 * Layering rules of DESIGN §16, checked on the import graph:
 *
 * - `runtime/api` describes a job and runs none, so no module under
 *   `runtime/api/` imports one under `runtime/cluster/` (the environment
 *   hands jobs to the `JobExecutor` of `runtime/api/executor.ts`, which
 *   `runtime/cluster/default_executor.ts` implements);
 * - the runtime never imports a connector: no module under `runtime/`
 *   imports one under `connectors/`.
 *
 * The rules bind the layers' code: test and bench files (`*_test.ts`,
 * `*_bench.ts`) may use fixtures from anywhere (e.g. `connectors/testing/`)
 * and are not scanned. Imports are read from Deno's own module graph
 * (`deno info --json`), so static, type-only, re-export and dynamic
 * (`import()`) imports all count, and examples in doc comments do not.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const ROOT = fileURLToPath(new URL("../", import.meta.url));

/** A layering rule: no module under `from` may import one under `to` (paths relative to the root, `/`-separated). */
interface LayeringRule {
  readonly from: string;
  readonly to: string;
}

/** One import that breaks a rule. */
interface Violation {
  readonly importer: string;
  readonly imported: string;
  readonly rule: LayeringRule;
}

async function layerFiles(root: string, dir: string): Promise<string[]> {
  const files: string[] = [];
  for await (const entry of Deno.readDir(join(root, dir))) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory) files.push(...await layerFiles(root, path));
    else if (
      entry.isFile && path.endsWith(".ts") && !path.endsWith("_test.ts") &&
      !path.endsWith("_bench.ts")
    ) files.push(path);
  }
  return files;
}

interface InfoDependency {
  readonly specifier: string;
  readonly code?: { readonly specifier: string };
  readonly type?: { readonly specifier: string };
}

/** Direct imports of every file, by root-relative path, from `deno info --json`. */
async function directImports(
  root: string,
  files: readonly string[],
): Promise<Map<string, string[]>> {
  const dir = await Deno.makeTempDir({ prefix: "weir-layering-" });
  try {
    const entry = join(dir, "entry.ts");
    await Deno.writeTextFile(
      entry,
      files.map((f) => `import ${JSON.stringify(pathToFileURL(join(root, f)).href)};\n`).join(""),
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(
        `deno info failed with code ${out.code}: ${new TextDecoder().decode(out.stderr)}`,
      );
    }
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      modules: { specifier: string; dependencies?: InfoDependency[] }[];
    };
    const imports = new Map<string, string[]>();
    const rootUrl = pathToFileURL(root.endsWith("/") ? root : `${root}/`).href;
    const rel = (url: string) => url.startsWith(rootUrl) ? url.slice(rootUrl.length) : url;
    for (const module of info.modules) {
      if (!module.specifier.startsWith(rootUrl)) continue;
      const targets = new Set<string>();
      for (const dep of module.dependencies ?? []) {
        if (dep.code !== undefined) targets.add(rel(dep.code.specifier));
        if (dep.type !== undefined) targets.add(rel(dep.type.specifier));
      }
      imports.set(rel(module.specifier), [...targets]);
    }
    return imports;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Every import among the layer files under the rules' `from` directories that breaks a rule. */
async function findViolations(root: string, rules: readonly LayeringRule[]): Promise<Violation[]> {
  const dirs = [...new Set(rules.map((r) => r.from))];
  const files = [...new Set((await Promise.all(dirs.map((d) => layerFiles(root, d)))).flat())];
  assert.ok(files.length > 0, `no layer files found under ${dirs.join(", ")} in ${root}`);
  const imports = await directImports(root, files);
  const violations: Violation[] = [];
  for (const file of files) {
    const targets = imports.get(file);
    assert.ok(targets !== undefined, `deno info did not list ${file} (root ${root})`);
    for (const rule of rules) {
      if (!file.startsWith(`${rule.from}/`)) continue;
      for (const target of targets) {
        if (target.startsWith(`${rule.to}/`)) {
          violations.push({ importer: file, imported: target, rule });
        }
      }
    }
  }
  return violations;
}

function describe(violations: readonly Violation[]): string {
  return violations.map((v) =>
    `${v.importer} imports ${v.imported} (${v.rule.from} must not import ${v.rule.to})`
  )
    .join("\n");
}

const RULES: readonly LayeringRule[] = [
  { from: "runtime/api", to: "runtime/cluster" },
  { from: "runtime", to: "connectors" },
];

Deno.test("no module of runtime/api imports runtime/cluster, and no module of runtime imports connectors", async () => {
  const violations = await findViolations(ROOT, RULES);
  assert.deepEqual(violations, [], `layering broken (DESIGN §16):\n${describe(violations)}`);
});

Deno.test("the layering scan reports static, type-only, re-export and dynamic imports across layers, and ignores doc comments and tests", async () => {
  const root = await Deno.makeTempDir({ prefix: "weir-layering-fixture-" });
  try {
    for (const dir of ["runtime/api", "runtime/cluster", "connectors/x"]) {
      await Deno.mkdir(join(root, dir), { recursive: true });
    }
    const write = (path: string, text: string) => Deno.writeTextFile(join(root, path), text);
    await write("runtime/cluster/run.ts", "export const run = 1;\nexport type Run = number;\n");
    await write("connectors/x/sink.ts", "export const sink = 2;\n");
    await write(
      "runtime/api/static.ts",
      'import { run } from "../cluster/run.ts";\nexport const a = run;\n',
    );
    await write(
      "runtime/api/type_only.ts",
      'import type { Run } from "../cluster/run.ts";\nexport type A = Run;\n',
    );
    await write("runtime/api/reexport.ts", 'export { run } from "../cluster/run.ts";\n');
    await write(
      "runtime/api/dynamic.ts",
      'export async function f() {\n  return (await import("../cluster/run.ts")).run;\n}\n',
    );
    await write(
      "runtime/api/doc_only.ts",
      '/**\n * ```ts\n * import { run } from "../cluster/run.ts";\n * ```\n */\nexport const clean = 0;\n',
    );
    await write(
      "runtime/api/uses_test.ts",
      'import { run } from "../cluster/run.ts";\nconsole.log(run);\n',
    );
    await write(
      "runtime/cluster/connector.ts",
      'import { sink } from "../../connectors/x/sink.ts";\nexport const c = sink;\n',
    );
    const violations = await findViolations(root, RULES);
    const found = violations.map((v) => `${v.importer} -> ${v.imported}`).sort();
    assert.deepEqual(found, [
      "runtime/api/dynamic.ts -> runtime/cluster/run.ts",
      "runtime/api/reexport.ts -> runtime/cluster/run.ts",
      "runtime/api/static.ts -> runtime/cluster/run.ts",
      "runtime/api/type_only.ts -> runtime/cluster/run.ts",
      "runtime/cluster/connector.ts -> connectors/x/sink.ts",
    ]);
    assert.match(
      describe(violations),
      /runtime\/api\/static\.ts imports runtime\/cluster\/run\.ts \(runtime\/api must not import runtime\/cluster\)/,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
