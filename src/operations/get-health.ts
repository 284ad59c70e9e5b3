/** GET /health (spec): liveness, a bare object. */
import { defineOperation } from './operation.js';
import * as ex from './examples.js';
import { HealthOut } from '../shapes/service.js';

export default defineOperation({
  id: 'getHealth',
  kind: 'query',
  path: ['health'],
  selection: 'status',
  params: [],
  rest: { envelope: false },
  openapi: {
    payload: HealthOut,
    docs: {
      tag: 'Service',
      summary: 'Liveness',
      description:
        'Answers while the process serves requests. It checks no database or other dependency, so a 200 does not promise that the data operations work (see GET /status). A bare object, without the envelope.',
      response: ex.HEALTH,
    },
  },
});
