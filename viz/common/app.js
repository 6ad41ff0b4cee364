// One import for pages: `import { ... } from '/viz/common/app.js'`.
export * from './dom.js';
export * from './fmt.js';
export * from './api.js';
export * from './poller.js';
export * from './panel.js';
export * from './sparkline.js';
export * from './dialog.js';
export * from './form.js';
export * from './nav.js';
export * from './predictions.js';
export * from './monitor.js';
export * from './poolpage.js';
