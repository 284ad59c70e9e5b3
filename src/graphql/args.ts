/**
 * GraphQL arguments built from the operation registry (src/operations/): a parameter's `graphql` spec (type, list,
 * non-null, default, description) becomes the Pothos argument its field declares, so an input is declared once for
 * REST, OpenAPI and GraphQL. The resolver's `args` are typed from the same declaration (`ArgsOf`); their rule is
 * `argsRule` of the same parameters (checked by metering for a metered field, else by the field's `validate`).
 */
import type { ArgBuilder, ArgumentRef } from '@pothos/core';
import type { builder } from './builder.js';
import { CallerFeeInput, CreateAlertInput, ExportFormatEnum, FundingEnum, HistoryIntervalEnum, PayoutEnum, SideFilterEnum } from './arg-types.js';
import type { ArgShape, ArgSpec, ArgsOf, ArgTypes, Param } from '../operations/operation.js';

type Types = typeof builder extends PothosSchemaTypes.SchemaBuilder<infer T> ? T : never;

/** The schema type of each `ArgSpec.type`. */
const REFS: Record<keyof ArgTypes, unknown> = {
  String: 'String',
  Int: 'Int',
  Float: 'Float',
  Boolean: 'Boolean',
  Date: 'Date',
  SideFilter: SideFilterEnum,
  ExportFormat: ExportFormatEnum,
  HistoryInterval: HistoryIntervalEnum,
  RouteFunding: FundingEnum,
  RoutePayout: PayoutEnum,
  CallerFeeInput,
  CreateAlertInput,
};

/** One Pothos argument from its spec. */
function argOf(arg: ArgBuilder<Types>, spec: ArgSpec): unknown {
  const named = REFS[spec.type];
  const options: Record<string, unknown> = { type: spec.list ? [named] : named, required: spec.required };
  if (spec.defaultValue !== undefined) options.defaultValue = spec.defaultValue;
  if (spec.description !== undefined) options.description = spec.description;
  return arg(options as never);
}

/** The Pothos arguments of the parameters in `params` that declare one (`graphql`), by argument name. */
export function paramArgs<const P extends readonly Param[]>(arg: ArgBuilder<Types>, params: P): { [K in keyof ArgsOf<P>]: ArgumentRef<Types, ArgsOf<P>[K]> } {
  const out: Record<string, unknown> = {};
  for (const p of params) if (p.arg && p.graphql) out[p.arg] = argOf(arg, p.graphql);
  return out as never;
}

/** The Pothos arguments a JSON body feeds (`BodySpec.args`), by argument name. */
export function bodyArgs<const B extends Record<string, ArgSpec>>(arg: ArgBuilder<Types>, args: B): { [K in keyof B]: ArgumentRef<Types, ArgShape<B[K]>> } {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(args)) out[name] = argOf(arg, spec);
  return out as never;
}

/** The parameters of `params` feeding the arguments `names` (a field below an operation's root, e.g. `Website.feeSchedule`). */
export function only<const P extends readonly Param[], const N extends string>(params: P, ...names: N[]): readonly Extract<P[number], { arg: N }>[] {
  return params.filter((p) => p.arg !== undefined && (names as string[]).includes(p.arg)) as never;
}
