/**
 * The JSON API: one route per library operation, each a thin call into Queue. Status codes:
 * 200 done, 400 bad input (the field named), 404 no such job or schedule, 409 the job is in a
 * state the action does not fit (or the set grew past what was confirmed), 422 over the bulk
 * cap, 503 Redis unreachable.
 *
 * The routes are grouped by what they act on, a file each in api/: queues, jobs, bulk actions,
 * limits and groups, schedules. The table below keeps the order they are mounted and listed in (the OpenAPI
 * document's order).
 */
import type { ApiContext } from './api/context.js';
import { bulkRoutes } from './api/bulk-routes.js';
import { groupRoutes } from './api/group-routes.js';
import { jobRoutes } from './api/job-routes.js';
import { queueControlRoutes, queueRoutes } from './api/queue-routes.js';
import { scheduleRoutes } from './api/schedule-routes.js';
import type { Route } from './route.js';

export type { ApiContext } from './api/context.js';
export { overdueOccurrence } from './api/schedule-routes.js';

export function apiRoutes(ctx: ApiContext): Route[] {
  return [...queueRoutes(ctx), ...jobRoutes(ctx), ...bulkRoutes(ctx), ...queueControlRoutes(), ...groupRoutes(ctx), ...scheduleRoutes(ctx)];
}
