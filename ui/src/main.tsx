/// <reference lib="dom" />
/** @jsx h */
/**
 * The dashboard's entry: renders the app into `#app` and pulls in uPlot's
 * stylesheet (bundled into `ui/dist/app.css` with the dashboard's own).
 *
 * @module
 */

import "npm:uplot@1.6.32/dist/uPlot.min.css";
import "./app.css";
import { h, render } from "./deps.ts";
import { App } from "./views/app.tsx";

const root = document.getElementById("app");
if (root === null) throw new Error("the dashboard's page has no #app element (ui/dist/index.html)");
render(<App />, root);
