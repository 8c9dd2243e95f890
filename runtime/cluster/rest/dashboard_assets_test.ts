import assert from "node:assert/strict";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { assetUrl, contentTypeOf, DashboardAssets } from "./dashboard_assets.ts";
import { createRestApp } from "./rest_server.ts";
import type { RestBackend } from "./job_facts.ts";

/** A backend with no jobs and no workers: the static routes need nothing of it. */
const emptyBackend: RestBackend = {
  overview: () => ({ jobs: [], workers: [] }),
  jobFacts: () => undefined,
  cancelJob: (jobId) => ({ ok: false, error: `no job ${jobId}` }),
  savepoint: (order) => Promise.reject(new Error(`no job ${order.jobId}`)),
};

/** A temporary dashboard root with index.html, app.js, app.css and icons/logo.svg. */
async function builtDashboard(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "weir-dashboard-test-" });
  await Deno.mkdir(join(dir, "icons"));
  await Deno.writeTextFile(
    join(dir, "index.html"),
    '<!doctype html><script type="module" src="ui/app.js"></script>',
  );
  await Deno.writeTextFile(join(dir, "app.js"), "console.log('weir');");
  await Deno.writeTextFile(join(dir, "app.css"), "body{}");
  await Deno.writeTextFile(join(dir, "icons", "logo.svg"), "<svg/>");
  await Deno.writeTextFile(join(dir, "notes.txt"), "not served");
  return dir;
}

Deno.test("assetUrl keeps names inside the root and refuses the rest", () => {
  const root = new URL("file:///srv/weir/ui/dist/");
  assert.equal(assetUrl(root, "app.js")?.href, "file:///srv/weir/ui/dist/app.js");
  assert.equal(assetUrl(root, "icons/logo.svg")?.href, "file:///srv/weir/ui/dist/icons/logo.svg");
  for (
    const bad of [
      "../deno.json",
      "icons/../../x.js",
      "./app.js",
      ".hidden.js",
      "/etc/passwd.js",
      "a//b.js",
      "a\\b.js",
      "%2e%2e/x.js",
      "app.ts",
      "README",
      "",
    ]
  ) {
    assert.equal(assetUrl(root, bad), undefined, bad);
  }
  assert.equal(contentTypeOf("index.html"), "text/html; charset=utf-8");
  assert.equal(contentTypeOf("app.JS"), "text/javascript; charset=utf-8");
  assert.equal(contentTypeOf("app.js.map"), "application/json; charset=utf-8");
  assert.equal(contentTypeOf("logo.png"), "image/png");
  assert.equal(contentTypeOf("notes.txt"), undefined);
});

Deno.test("REST app: GET / answers index.html and GET /ui/<file> its assets with their content types", async () => {
  const dir = await builtDashboard();
  try {
    const app = createRestApp({ backend: emptyBackend, dashboardRoot: dir });
    const cases: [string, string, string][] = [
      ["/", "text/html; charset=utf-8", '<!doctype html><script type="module" src="ui/app.js">'],
      ["/ui/app.js", "text/javascript; charset=utf-8", "console.log('weir');"],
      ["/ui/app.css", "text/css; charset=utf-8", "body{}"],
      ["/ui/icons/logo.svg", "image/svg+xml", "<svg/>"],
      ["/ui/index.html", "text/html; charset=utf-8", "<!doctype html>"],
    ];
    for (const [path, type, start] of cases) {
      const res = await app.request(path);
      assert.equal(res.status, 200, path);
      assert.equal(res.headers.get("content-type"), type, path);
      assert.ok((await res.text()).startsWith(start), path);
    }
    for (
      const path of [
        "/ui/missing.js",
        "/ui/notes.txt",
        "/ui/%2e%2e/%2e%2e/deno.json",
        "/ui/%252e%252e/x.js",
        "/ui/icons/%2e%2e/%2e%2e/x.js",
        "/ui/.hidden.js",
      ]
    ) {
      const res = await app.request(path);
      assert.equal(res.status, 404, path);
      const body = await res.json();
      assert.deepEqual(Object.keys(body), ["errors"]);
      // `%2e%2e` segments are resolved by the URL parser (then no route
      // matches) or reach the route as `..` and are refused: 404 either way.
      assert.match(
        body.errors[0],
        /^(Dashboard file ui\/.* not found in file:\/\/|Not found: GET \/)/,
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("REST app: without a built dashboard, GET / answers 404 naming index.html and deno task ui:build", async () => {
  const dir = await Deno.makeTempDir({ prefix: "weir-dashboard-test-" });
  try {
    const app = createRestApp({ backend: emptyBackend, dashboardRoot: dir });
    const res = await app.request("/");
    assert.equal(res.status, 404);
    const body = await res.json();
    assert.equal(
      body.errors[0],
      `The dashboard is not built: ${pathToFileURL(dir).href}/index.html is missing; build it ` +
        `with 'deno task ui:build' (the REST API answers meanwhile)`,
    );
    // The API still answers.
    assert.deepEqual(await (await app.request("/jobs")).json(), { jobs: [] });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("REST app: with a token, the dashboard's files need none and the API routes still do", async () => {
  const dir = await builtDashboard();
  try {
    const app = createRestApp({ backend: emptyBackend, token: "s3cret", dashboardRoot: dir });
    assert.equal((await app.request("/")).status, 200);
    assert.equal((await app.request("/ui/app.js")).status, 200);
    // A missing file is a 404, not a 401: there is no data behind it either.
    assert.equal((await app.request("/ui/nope.js")).status, 404);
    for (const path of ["/overview", "/jobs", "/jobs/overview", "/metrics", "/uix", "/jobs/x"]) {
      const res = await app.request(path);
      assert.equal(res.status, 401, path);
      await res.body?.cancel();
    }
    const ok = await app.request("/jobs", { headers: { Authorization: "Bearer s3cret" } });
    assert.equal(ok.status, 200);
    await ok.body?.cancel();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("DashboardAssets keeps a file read once, and finds a file built after a miss", async () => {
  const dir = await builtDashboard();
  try {
    const assets = new DashboardAssets(dir);
    assert.equal(
      new TextDecoder().decode((await assets.get("app.js"))!.body),
      "console.log('weir');",
    );
    await Deno.remove(join(dir, "app.js"));
    assert.equal(
      new TextDecoder().decode((await assets.get("app.js"))!.body),
      "console.log('weir');",
    );
    assert.equal(await assets.get("late.js"), undefined);
    await Deno.writeTextFile(join(dir, "late.js"), "late");
    assert.equal(new TextDecoder().decode((await assets.get("late.js"))!.body), "late");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("DashboardAssets reads from an http: root as from a file: one", async () => {
  const files: Record<string, string> = { "/dist/index.html": "<!doctype html>remote" };
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    const body = files[new URL(req.url).pathname];
    return body === undefined ? new Response("no", { status: 404 }) : new Response(body);
  });
  try {
    const assets = new DashboardAssets(new URL(`http://127.0.0.1:${server.addr.port}/dist`));
    assert.equal(assets.root.pathname, "/dist/");
    const index = await assets.get("index.html");
    assert.equal(new TextDecoder().decode(index!.body), "<!doctype html>remote");
    assert.equal(index!.contentType, "text/html; charset=utf-8");
    assert.equal(await assets.get("app.js"), undefined);
  } finally {
    await server.shutdown();
  }
});

Deno.test("REST app: a dashboard name the file system refuses (too long, through a file, a directory) is a 404, not a 500", async () => {
  const dir = await builtDashboard();
  await Deno.mkdir(join(dir, "folder.js"));
  try {
    const app = createRestApp({ backend: emptyBackend, dashboardRoot: dir });
    for (
      const path of [
        `/ui/${"a".repeat(300)}.js`, // one segment past NAME_MAX (ENAMETOOLONG)
        `/ui/${"a/".repeat(3000)}x.js`, // a name past PATH_MAX
        "/ui/app.js/x.js", // through a file (ENOTDIR)
        "/ui/folder.js", // a directory (EISDIR)
      ]
    ) {
      const res = await app.request(path);
      assert.equal(res.status, 404, path.slice(0, 40));
      const body = await res.json();
      assert.match(body.errors[0], /^Dashboard file ui\/.* not found in file:\/\//);
      assert.ok(body.errors[0].length < 600, "the refused name is shortened in the message");
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("REST app: the dashboard's files carry an ETag and answer If-None-Match with 304", async () => {
  const dir = await builtDashboard();
  try {
    const app = createRestApp({ backend: emptyBackend, dashboardRoot: dir, token: "s3cret" });
    const first = await app.request("/ui/app.js");
    await first.body?.cancel();
    const etag = first.headers.get("etag");
    assert.match(etag ?? "", /^"[0-9a-f]{32}"$/);
    assert.equal(first.headers.get("cache-control"), "no-cache");
    for (const inm of [etag!, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await app.request("/ui/app.js", { headers: { "If-None-Match": inm } });
      assert.equal(res.status, 304, inm);
      assert.equal(res.headers.get("etag"), etag);
      assert.equal(await res.text(), "");
    }
    const changed = await app.request("/ui/app.js", { headers: { "If-None-Match": '"other"' } });
    assert.equal(changed.status, 200);
    assert.equal(await changed.text(), "console.log('weir');");
    // Another file has another tag; `/` tags index.html.
    const css = await app.request("/ui/app.css");
    await css.body?.cancel();
    assert.notEqual(css.headers.get("etag"), etag);
    const index = await app.request("/ui/index.html");
    await index.body?.cancel();
    const root = await app.request("/", {
      headers: { "If-None-Match": index.headers.get("etag")! },
    });
    assert.equal(root.status, 304);
    // HEAD answers the headers of GET (Hono routes HEAD to GET without the body).
    const head = await app.request("/ui/app.js", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("etag"), etag);
    assert.equal(await head.text(), "");
    assert.equal(head.headers.get("content-length"), String("console.log('weir');".length));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
