/** delayq/dashboard: the HTTP API and web dashboard, to run alone or mount in an app. */
export { createDashboard, type Dashboard, type DashboardOptions, type AuditLine } from './dashboard.js';
export { serveDashboard, type ServeOptions, type RunningDashboard } from './serve.js';
export { nodeHandler, expressHandler, fastifyPlugin, type NodeHandler } from './adapters.js';
export type { Action, AuthorizeContext, AuthorizeHook } from './security.js';
