/**
 * The GraphQL documents behind the REST routes, derived from the operation registry and the schema
 * (src/operations/operation.ts `documentText`): aliases give each field its REST name, so a document's result is
 * already the documented JSON shape (spec field names are exact). Quotes are selected as `marketsJson`: the text
 * `quoteJson` (quotes/quotes.ts) wrote once per cached quote.
 */
import { schema } from '../graphql/schema.js';
import { OPERATIONS } from '../operations/index.js';
import { documentText } from '../operations/operation.js';

/** Document text per operation id of the endpoint catalogue. */
export const DOCUMENTS: Readonly<Record<string, string>> = Object.fromEntries(OPERATIONS.map((op) => [op.id, documentText(op, schema)]));

/** The GraphiQL example: every website with its full fee schedule in one request. */
export const GRAPHIQL_EXAMPLE = `# Every marketplace with its full official fee schedule, in one request.
# Prices need an API key: add the header {"Authorization": "Bearer qg_..."} below.
query WebsitesWithFeeSchedules {
  websites(includeDeprecated: true) {
    code
    name
    isDeprecated
    feeSchedule {
      slots {
        deposit { ...Slot }
        sale { ...Slot }
        withdraw { ...Slot }
      }
    }
  }
}

fragment Slot on FeeScheduleSlot {
  purpose
  calculationChain {
    id
    name
    startCurrency
    steps {
      kind
      id
      name
      ... on FeeOperatorStep { operator value currencyCode }
      ... on ConvertOperatorStep { mode rate from { code usdRate } to { code usdRate } }
      ... on ConvertOperatorGroupStep { rule members { mode rate from { code } to { code } } }
    }
  }
}
`;
