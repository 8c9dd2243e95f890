import assert from "node:assert/strict";
import { join } from "node:path";
import { bundleCacheDir, DT_SQL_PARSER_PACKAGE } from "./flink_sql_bundle.ts";

const PARSER = new URL("../parser.ts", import.meta.url).href;

/** Runs a Deno process that parses one statement with WEIR_CACHE_DIR set to `cache`. */
async function parseInChild(
  cache: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const script = `import { parseScript } from ${JSON.stringify(PARSER)};\n` +
    `console.log(parseScript("SELECT a FROM t WHERE a OR b AND c").map((s) => s.k).join());`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--quiet", script],
    env: { WEIR_CACHE_DIR: cache },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b).trim();
  return { code: out.code, stdout: decode(out.stdout), stderr: decode(out.stderr) };
}

Deno.test("bundleCacheDir(): WEIR_CACHE_DIR, else XDG_CACHE_HOME/weir, else HOME/.cache/weir; none is an error", () => {
  const dir = (env: Record<string, string>) => bundleCacheDir((name) => env[name]);
  const leaf = DT_SQL_PARSER_PACKAGE.replace("@", "-");
  assert.equal(dir({ WEIR_CACHE_DIR: "/w", XDG_CACHE_HOME: "/x", HOME: "/h" }), join("/w", leaf));
  assert.equal(dir({ XDG_CACHE_HOME: "/x", HOME: "/h" }), join("/x", "weir", leaf));
  assert.equal(dir({ WEIR_CACHE_DIR: "", HOME: "/h" }), join("/h", ".cache", "weir", leaf));
  assert.throws(() => dir({}), /set WEIR_CACHE_DIR/);
  assert.throws(
    () =>
      bundleCacheDir(() => {
        throw new Deno.errors.NotCapable("env access");
      }),
    /reading WEIR_CACHE_DIR failed .*--allow-env/,
  );
});

Deno.test({
  name:
    "processes racing on an empty cache each build the bundle and parse; one whole bundle stays, a damaged one is rebuilt",
  sanitizeResources: false,
  async fn() {
    const cache = await Deno.makeTempDir({ prefix: "weir-sql-cache-" });
    try {
      const results = await Promise.all([parseInChild(cache), parseInChild(cache)]);
      for (const r of results) {
        assert.equal(r.code, 0, r.stderr);
        assert.equal(r.stdout, "select");
      }
      const dir = join(cache, DT_SQL_PARSER_PACKAGE.replace("@", "-"));
      const entries = [...Deno.readDirSync(dir)].map((e) => e.name);
      assert.deepEqual(entries, ["flinksql-cjs-v1.js"], "no temporary build directory is left");
      const file = join(dir, entries[0]!);
      assert.ok(Deno.statSync(file).size > 100_000);

      await Deno.writeTextFile(file, "this is not JavaScript (");
      const again = await parseInChild(cache);
      assert.equal(again.code, 0, again.stderr);
      assert.equal(again.stdout, "select");
      assert.ok(Deno.statSync(file).size > 100_000, "the damaged bundle was replaced");
    } finally {
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test({
  name: "a cache directory that cannot be created fails the first parse with a message naming it",
  sanitizeResources: false,
  async fn() {
    const file = await Deno.makeTempFile({ prefix: "weir-not-a-dir-" });
    try {
      const r = await parseInChild(join(file, "sub"));
      assert.notEqual(r.code, 0);
      assert.match(
        r.stderr,
        /the SQL parser's cache directory .*weir-not-a-dir-.*sub.* cannot be created/,
      );
    } finally {
      await Deno.remove(file);
    }
  },
});
