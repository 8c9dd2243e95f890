/**
 * Builds the web dashboard's static assets (issue 16): bundles
 * `ui/src/main.tsx` with `deno bundle --platform browser --minify` (Preact,
 * dagre and uPlot included; nothing is fetched at run time) and writes
 * `app.js`, `app.css` (uPlot's stylesheet, then the dashboard's) and
 * `index.html` into the output folder, `ui/dist/` by default. The
 * coordinator's REST server and a local job run with `--ui` serve that
 * folder: `GET /` answers `index.html`, `GET /ui/<file>` the rest.
 *
 * Run it with `deno task ui:build` after changing anything under `ui/src/`
 * and commit `ui/dist/`; `ui/build_test.ts` fails while the committed files
 * differ from a fresh build. The build is deterministic: the same sources
 * and pinned packages give the same bytes (the test builds twice).
 *
 * Usage: `deno run -A ui/build.ts [--out <dir>]`.
 *
 * @module
 */

import { copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/** The dashboard's folder (`ui/`). */
export const UI_DIR: string = fileURLToPath(new URL(".", import.meta.url));

/** The committed build's folder (`ui/dist/`). */
export const DIST_DIR: string = join(UI_DIR, "dist");

/** The files a build writes, in the order the test compares them. */
export const DIST_FILES: readonly string[] = ["index.html", "app.js", "app.css"];

/** The failure of `deno bundle`, with its exit code and output. */
export class DashboardBuildError extends Error {
  /**
   * A failed build.
   * @param message what failed, with `deno bundle`'s output
   */
  constructor(message: string) {
    super(message);
    this.name = "DashboardBuildError";
  }
}

/**
 * Bundles the dashboard into `outDir` (created if missing; the three files
 * replaced).
 * @param outDir the folder to write `index.html`, `app.js` and `app.css` into
 * @returns the sizes of the files written, in bytes, by name
 * @throws {DashboardBuildError} when `deno bundle` fails (its stderr is in the message)
 */
export async function buildDashboard(outDir: string = DIST_DIR): Promise<Record<string, number>> {
  const work = await mkdtemp(join(tmpdir(), "weir-ui-build-"));
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "bundle",
        "--quiet",
        "--platform",
        "browser",
        "--minify",
        "--outdir",
        work,
        join(UI_DIR, "src", "main.tsx"),
      ],
      cwd: join(UI_DIR, ".."),
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new DashboardBuildError(
        `deno bundle of ui/src/main.tsx failed (exit code ${out.code}):\n${
          new TextDecoder().decode(out.stderr)
        }`,
      );
    }
    await Deno.mkdir(outDir, { recursive: true });
    const js = await readFile(join(work, "main.js"));
    const css = await readFile(join(work, "main.css"));
    await writeFile(join(outDir, "app.js"), js);
    await writeFile(join(outDir, "app.css"), css);
    await copyFile(join(UI_DIR, "src", "index.html"), join(outDir, "index.html"));
    const sizes: Record<string, number> = {};
    for (const f of DIST_FILES) sizes[f] = (await Deno.stat(join(outDir, f))).size;
    return sizes;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

if (import.meta.main) {
  const i = Deno.args.indexOf("--out");
  const outDir = i >= 0 ? Deno.args[i + 1] : DIST_DIR;
  if (outDir === undefined || outDir === "") {
    console.error("error: --out needs a folder, e.g. --out /tmp/weir-ui");
    Deno.exit(2);
  }
  const sizes = await buildDashboard(outDir);
  console.error(
    `weir: dashboard built into ${outDir} (${
      Object.entries(sizes).map(([f, n]) => `${f} ${n} B`).join(", ")
    })`,
  );
}
