/**
 * A subscription asked for over GraphQL-over-HTTP must be able to send its events: its request's Accept names
 * `text/event-stream`. Otherwise it is refused (406 `not_acceptable`) before anything starts, is reserved or is
 * charged. Yoga's own negotiation would refuse it too, but only after the subscription started.
 *
 * Read from the request Yoga puts in the context: a subscription that comes another way (graphql-ws on /graphql, the
 * REST event stream, whose contexts carry no fetch Request) is carried by its transport. Put it before the metering
 * plugin.
 */
import type { Plugin } from 'graphql-yoga';
import { ServiceError } from '../lib/errors.js';
import { toGraphQLError } from '../graphql/errors.js';

/** The plugin (see the module doc). */
export function useEventStreamAccept(): Plugin {
  return {
    onSubscribe({ args, setResultAndStopExecution }) {
      const request = (args.contextValue as { request?: Request } | undefined)?.request;
      if (!request || (request.headers.get('accept') ?? '').includes('text/event-stream')) return;
      setResultAndStopExecution({
        errors: [
          toGraphQLError(
            new ServiceError('not_acceptable', 406, 'A subscription streams its events: send Accept: text/event-stream (or use graphql-ws on /graphql, or GET /prices/changes/stream).'),
          ),
        ],
      });
    },
  };
}
