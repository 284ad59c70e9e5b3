/** A GraphQL document typed with its result and variables (a plain string at run time). */
export type TypedDocument<Result, Variables> = string & { readonly __result?: Result; readonly __variables?: Variables };
