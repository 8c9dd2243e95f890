/**
 * The dashboard's libraries, pinned in one place: Preact (views), dagre
 * (the job graph's left-to-right layout) and uPlot (time series). The
 * build bundles them into `ui/dist/app.js`; nothing is fetched at run time.
 *
 * @module
 */

export { createContext, Fragment, h, render } from "npm:preact@11.2.0";
export type { ComponentChildren, JSX, VNode } from "npm:preact@11.2.0";
export { useContext, useEffect, useMemo, useRef, useState } from "npm:preact@11.2.0/hooks";
export { default as dagre } from "npm:@dagrejs/dagre@3.1.3";
export { default as uPlot } from "npm:uplot@1.6.32";
export type { default as UPlot, Options as UPlotOptions } from "npm:uplot@1.6.32";
