/**
 * Chromium for the browser tests: where it is (Debian's `chromium`, or APPREG_CHROMIUM) and the
 * flags it is launched with (headless, no sandbox as root, nothing that reaches the network on
 * its own). Each browser test hands CHROMIUM to testNeeding and launches with CHROMIUM_ARGS.
 */
import type { SystemComponent } from './system-component.js';

export const CHROMIUM: SystemComponent = {
  path: '/usr/bin/chromium',
  envVar: 'APPREG_CHROMIUM',
  install: 'apt-get install chromium',
};

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
