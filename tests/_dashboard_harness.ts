/**
 * Test support for the web dashboard's browser test
 * (`tests/dashboard_browser_test.ts`): Debian's Chromium driven headless by
 * `playwright-core`, a cluster (private NATS server, a coordinator serving
 * the REST API and the dashboard, one worker) running the slow-sink job of
 * `tests/_dashboard_job.ts`, DOM waits that fail with what the page and the
 * REST API showed, and the screenshots.
 *
 * Screenshots go to a temporary directory, removed at the end, unless
 * `WEIR_DASHBOARD_SCREENSHOTS=1` is set: then they are written to
 * `docs/dashboard/<nn>-<step>.png`, the pictures README shows (so a test run
 * does not change files the repository tracks).
 *
 * @module
 */

import { join } from "node:path";
import { type Browser, chromium, errors, type Page } from "npm:playwright-core@1.57.0";
import { Proc, REPO_ROOT, TestCluster } from "./_cluster.ts";
import { type NatsServerHandle, startNatsServer } from "./_nats_server.ts";
import { waitUntil } from "./_wait.ts";

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM_PATH = "/usr/bin/chromium";

/** The job module the dashboard tests run. */
export const DASHBOARD_JOB: string = join(REPO_ROOT, "tests/_dashboard_job.ts");

/** How long a test waits for anything (a process, a DOM condition), in ms: generous for a loaded 2-core machine running the suite in parallel. */
export const DASHBOARD_TIMEOUT_MS = 90_000;

/** The browser window's size, in CSS pixels (the screenshots' size). */
export const VIEWPORT: { readonly width: number; readonly height: number } = {
  width: 1400,
  height: 900,
};

/** A JSON object as the REST API answers it. */
export type Json = Record<string, unknown>;

/**
 * Starts headless Chromium from {@linkcode CHROMIUM_PATH}.
 *
 * @returns The browser; close it in `finally`.
 * @throws {Error} saying to `apt-get install chromium` when the binary is
 * missing (the test fails rather than skipping silently).
 */
export async function launchChromium(): Promise<Browser> {
  try {
    await Deno.stat(CHROMIUM_PATH);
  } catch {
    throw new Error(
      `No Chromium at ${CHROMIUM_PATH}: the dashboard's browser test needs Debian's chromium ` +
        `package (apt-get install chromium)`,
    );
  }
  return await chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
    ],
  });
}

/**
 * Opens a page of {@linkcode VIEWPORT} size, whose actions (click, goto)
 * wait up to {@linkcode DASHBOARD_TIMEOUT_MS}, and that records the page's
 * uncaught errors (`pageerror`) in `errors`, for the test to assert there
 * are none.
 *
 * @param browser From {@linkcode launchChromium}.
 * @returns The page and its uncaught errors so far (the array grows).
 */
export async function openPage(browser: Browser): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: VIEWPORT });
  // Clicks and navigations wait as long as the DOM conditions do (a loaded CI machine).
  context.setDefaultTimeout(DASHBOARD_TIMEOUT_MS);
  const page = await context.newPage();
  const uncaught: string[] = [];
  page.on("pageerror", (error) => uncaught.push(`${error.name}: ${error.message}`));
  return { page, errors: uncaught };
}

/**
 * Waits until `selector` matches an element in `page`, failing with `what`,
 * the page's URL and its visible text (and `context()`, e.g. what the REST
 * API answered) when it does not within `timeoutMs`.
 *
 * @param page The page.
 * @param selector A CSS selector.
 * @param what What is awaited, for the message ("vertex v1 HIGH").
 * @param context More facts for the message.
 * @param timeoutMs Default {@linkcode DASHBOARD_TIMEOUT_MS}.
 * @throws {Error} when the time passed first.
 */
export async function waitForSelector(
  page: Page,
  selector: string,
  what: string,
  context: () => Promise<string> | string = () => "",
  timeoutMs: number = DASHBOARD_TIMEOUT_MS,
): Promise<void> {
  try {
    await page.locator(selector).first().waitFor({ state: "attached", timeout: timeoutMs });
  } catch (error) {
    if (!(error instanceof errors.TimeoutError)) throw error;
    throw new Error(
      `Gave up after ${timeoutMs} ms waiting for ${what} (${selector}) at ${page.url()}\n` +
        `page text: ${(await pageText(page)).slice(0, 2000)}\n${await context()}`,
      { cause: error },
    );
  }
}

/**
 * Waits until `condition` (run here, typically reading the page through
 * locators) holds, checking it every 200 ms; fails like
 * {@linkcode waitForSelector}.
 *
 * @param page The page, for the message.
 * @param condition Checked until it resolves to true.
 * @param what What is awaited, for the message.
 * @param context More facts for the message.
 * @throws {Error} when {@linkcode DASHBOARD_TIMEOUT_MS} passed first.
 */
export async function waitInPage(
  page: Page,
  condition: () => boolean | Promise<boolean>,
  what: string,
  context: () => Promise<string> | string = () => "",
): Promise<void> {
  const until = Date.now() + DASHBOARD_TIMEOUT_MS;
  while (!(await condition())) {
    if (Date.now() > until) {
      throw new Error(
        `Gave up after ${DASHBOARD_TIMEOUT_MS} ms waiting for ${what} at ${page.url()}\n` +
          `page text: ${(await pageText(page)).slice(0, 2000)}\n${await context()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The visible text of the page's body ("" when the page cannot answer). */
export async function pageText(page: Page): Promise<string> {
  return await page.locator("body").innerText({ timeout: 5_000 }).catch(() => "");
}

/**
 * Where screenshots go: `docs/dashboard/` with `WEIR_DASHBOARD_SCREENSHOTS=1`,
 * else a temporary directory that {@linkcode Screenshots.close} removes.
 */
export class Screenshots {
  /** The directory written to. */
  readonly directory: string;
  readonly #temporary: boolean;
  /** Files written so far. */
  readonly written: string[] = [];

  private constructor(directory: string, temporary: boolean) {
    this.directory = directory;
    this.#temporary = temporary;
  }

  /** Picks the directory (see the class docs) and makes it. */
  static async open(): Promise<Screenshots> {
    if (Deno.env.get("WEIR_DASHBOARD_SCREENSHOTS") === "1") {
      const directory = join(REPO_ROOT, "docs/dashboard");
      await Deno.mkdir(directory, { recursive: true });
      return new Screenshots(directory, false);
    }
    return new Screenshots(await Deno.makeTempDir({ prefix: "weir-dashboard-shots-" }), true);
  }

  /**
   * Writes the page's viewport as `<name>.png` and checks it is a PNG of
   * some size.
   *
   * @param page The page.
   * @param name The file's name without `.png`, e.g. `"01-overview"`.
   * @throws {Error} when the file is not a PNG of at least 5 KB.
   */
  async take(page: Page, name: string): Promise<void> {
    const path = join(this.directory, `${name}.png`);
    await page.screenshot({ path, animations: "disabled" });
    const bytes = await Deno.readFile(path);
    const png = [0x89, 0x50, 0x4e, 0x47];
    if (bytes.length < 5_000 || png.some((b, i) => bytes[i] !== b)) {
      throw new Error(`Screenshot ${path} is not a PNG of at least 5 KB (${bytes.length} bytes)`);
    }
    this.written.push(path);
  }

  /**
   * Before a picture README shows, lets the page's live charts gather
   * samples for `ms`; returns at once when the screenshots go to a
   * temporary directory. Never a condition the test asserts on.
   *
   * @param page The page (waited on).
   * @param ms How long, in ms.
   */
  async settle(page: Page, ms: number): Promise<void> {
    if (!this.#temporary) await page.waitForTimeout(ms);
  }

  /** Removes the temporary directory (screenshots in `docs/dashboard/` stay). */
  async close(): Promise<void> {
    if (this.#temporary) await Deno.remove(this.directory, { recursive: true }).catch(() => {});
  }
}

/** Options of {@linkcode DashboardCluster.start}. */
export interface DashboardClusterOptions {
  /** `--rest-token` of the coordinator; default none (the API is open). */
  readonly token?: string;
}

/**
 * A private NATS server, a coordinator with `--rest-port 0` (and
 * `--rest-token` when given), and one worker with 4 slots.
 */
export class DashboardCluster {
  /** The NATS server. */
  readonly nats: NatsServerHandle;
  /** The coordinator and worker. */
  readonly cluster: TestCluster;
  /** `http://127.0.0.1:<port>` of the REST API and dashboard. */
  readonly base: string;
  /** The bearer token, if any. */
  readonly token: string | undefined;
  /** The worker's id (`--id`), unique to this cluster. */
  readonly workerId: string;
  /** Job client processes started by {@linkcode DashboardCluster.submit}. */
  readonly clients: Proc[] = [];

  private constructor(
    nats: NatsServerHandle,
    cluster: TestCluster,
    base: string,
    token: string | undefined,
    workerId: string,
  ) {
    this.nats = nats;
    this.cluster = cluster;
    this.base = base;
    this.token = token;
    this.workerId = workerId;
  }

  /**
   * Starts the cluster and resolves once the coordinator's REST port is known
   * and the worker is up.
   *
   * @param options The token.
   * @returns The running cluster; `stop()` it in `finally`.
   */
  static async start(options: DashboardClusterOptions = {}): Promise<DashboardCluster> {
    const nats = await startNatsServer({ jetstream: true });
    const cluster = new TestCluster({
      nats: nats.url,
      workers: 0,
      slots: 4,
      // A loaded 2-core machine can stall a worker for seconds; a failover then
      // is not what these tests look at.
      heartbeatTimeoutMs: 10_000,
      coordinatorArgs: [
        "--rest-port",
        "0",
        ...(options.token === undefined ? [] : ["--rest-token", options.token]),
      ],
    });
    const workerId = `dashboard-w-${crypto.randomUUID().slice(0, 8)}`;
    try {
      await cluster.start();
      await cluster.startWorker(workerId);
      await cluster.coordinator.waitFor(/REST API on port \d+/, DASHBOARD_TIMEOUT_MS);
      const port = Number(/REST API on port (\d+)/.exec(cluster.coordinator.output)![1]);
      const base = `http://127.0.0.1:${port}`;
      return new DashboardCluster(nats, cluster, base, options.token, workerId);
    } catch (error) {
      await cluster.stop().catch(() => {});
      await nats.stop();
      throw error;
    }
  }

  /**
   * `GET <path>` of the REST API (with the token), parsed.
   *
   * @throws {Error} naming the path, status and body unless it answers 200.
   */
  async get(path: string): Promise<Json> {
    const res = await fetch(`${this.base}${path}`, {
      headers: this.token === undefined ? {} : { Authorization: `Bearer ${this.token}` },
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${text}`);
    return JSON.parse(text);
  }

  /**
   * Runs the slow-sink job ({@linkcode DASHBOARD_JOB}) named `name` on the
   * cluster and resolves with its id once `/jobs/overview` lists it RUNNING.
   *
   * @param name A job name unique to the test.
   * @param args More arguments of the job module (e.g. `--fail-flag PATH`).
   * @returns The job's id.
   */
  async submit(name: string, args: readonly string[] = []): Promise<string> {
    const client = new Proc(`client ${name}`, [
      "run",
      "-A",
      DASHBOARD_JOB,
      "--name",
      name,
      "--nats",
      this.nats.url,
      ...args,
    ]);
    this.clients.push(client);
    let jobId: string | undefined;
    let last: Json = {};
    await waitUntil(async () => {
      last = await this.get("/jobs/overview");
      const line = (last.jobs as Json[]).find((j) => j.name === name && j.state === "RUNNING");
      jobId = line?.jid as string | undefined;
      return jobId !== undefined;
    }, {
      timeoutMs: DASHBOARD_TIMEOUT_MS,
      pollMs: 250,
      missing: () =>
        `job '${name}' not RUNNING in /jobs/overview: ${JSON.stringify(last)}\n${this.logs()}`,
    });
    return jobId!;
  }

  /** Every process's output, for a failure's message. */
  logs(): string {
    return [...this.cluster.coordinators, ...this.cluster.workers, ...this.clients]
      .map((p) => `----- ${p.name}\n${p.output}`).join("\n");
  }

  /** Stops the job clients, the worker, the coordinator and the NATS server. */
  async stop(): Promise<void> {
    for (const client of this.clients) {
      try {
        client.child.kill("SIGTERM");
      } catch {
        // ended
      }
      await client.endWithin(15_000).catch(() => {});
    }
    await this.cluster.stop().catch(() => {});
    await this.nats.stop();
  }
}
