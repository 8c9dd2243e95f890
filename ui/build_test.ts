import assert from "node:assert/strict";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildDashboard, DIST_DIR, DIST_FILES } from "./build.ts";

async function freshBuild(): Promise<{ dir: string; files: Map<string, Uint8Array> }> {
  const dir = await mkdtemp(join(tmpdir(), "weir-ui-test-"));
  await buildDashboard(dir);
  const files = new Map<string, Uint8Array>();
  for (const f of DIST_FILES) files.set(f, await readFile(join(dir, f)));
  return { dir, files };
}

Deno.test("the dashboard build is deterministic and ui/dist is up to date", async (t) => {
  const a = await freshBuild();
  const b = await freshBuild();
  try {
    await t.step("two builds give the same bytes", () => {
      for (const f of DIST_FILES) {
        assert.ok(
          equal(a.files.get(f), b.files.get(f)),
          `ui/${f}: two builds of the same sources differ`,
        );
      }
    });
    await t.step("the committed ui/dist equals a fresh build", async () => {
      for (const f of DIST_FILES) {
        let committed: Uint8Array | undefined;
        try {
          committed = await readFile(join(DIST_DIR, f));
        } catch {
          committed = undefined;
        }
        assert.ok(
          equal(committed, a.files.get(f)),
          `ui/dist is stale: run deno task ui:build (ui/dist/${f} ${
            committed === undefined ? "is missing" : "differs from a fresh build"
          })`,
        );
      }
    });
    await t.step("index.html refers to its assets relatively", () => {
      const html = new TextDecoder().decode(a.files.get("index.html"));
      assert.match(html, /src="ui\/app\.js"/);
      assert.match(html, /href="ui\/app\.css"/);
    });
    await t.step("app.css holds uPlot's stylesheet and the dashboard's", () => {
      const css = new TextDecoder().decode(a.files.get("app.css"));
      assert.match(css, /\.uplot/);
      assert.match(css, /\.vertex/);
    });
  } finally {
    await rm(a.dir, { recursive: true, force: true });
    await rm(b.dir, { recursive: true, force: true });
  }
});

function equal(x: Uint8Array | undefined, y: Uint8Array | undefined): boolean {
  if (x === undefined || y === undefined || x.length !== y.length) return false;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}
