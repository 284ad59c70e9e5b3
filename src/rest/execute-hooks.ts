/**
 * The pipeline's `onExecute` hooks run for a REST route's compiled document without envelop's generic orchestrator
 * (issue: serving quotes at the machine's limit, step "compiled execution": the route documents are fixed, so
 * the hook chain around them is compiled once at start, as their execution is).
 *
 * Same hooks, same order, same contract as `@envelop/core`'s orchestrator (its `customExecute`, envelop 5): every
 * plugin's `onExecute` gets `executeFn`, `setExecuteFn`, `setResultAndStopExecution`, `context`, `extendContext`
 * and `args`, one after another (a returned promise is waited for before the next hook); what they return is kept
 * and, after execution (or the result a hook set), each `onExecuteDone` gets `args`, `result` and `setResult`.
 * Without a `useEngine` plugin the execution throws envelop's own "No `execute` function found" error; a stop with
 * a falsy result executes anyway (envelop's `result || executeFn(...)`); `extendContext` accepts what envelop
 * accepts. What differs is the cost: envelop runs each step through its promise helpers (a fake promise and closures
 * per hook, about a quarter of a cached GET's allocations, `BENCH_PROFILE=heap`); here a synchronous hook is a plain
 * call, and the request's setters are made once for all its hooks.
 *
 * Used for route documents only: query documents whose execution never yields an async iterable. `onNext`/`onEnd`
 * handlers returned from `onExecuteDone` are ignored for a single result, as envelop ignores them; a stream result
 * with such handlers is refused loudly (it cannot come from a route). A pipeline with `instrumentation` or
 * `onEnveloped` hooks is not compiled (`compileExecuteHooks` returns null), and the facade keeps envelop's own `execute`.
 */
import type { ExecutionArgs, ExecutionResult } from 'graphql';
import { isAsyncIterable } from '@envelop/core';

/** What one `onExecute` hook receives (envelop's OnExecuteEventPayload, the members the app's plugins use and the rest). */
interface ExecutePayload {
  executeFn: (args: ExecutionArgs) => unknown;
  setExecuteFn(fn: (args: ExecutionArgs) => unknown): void;
  setResultAndStopExecution(result: ExecutionResult): void;
  context: Record<string, unknown>;
  extendContext(extension: Record<string, unknown>): void;
  args: ExecutionArgs;
}

/** What a hook may return: `onExecuteDone` to run after execution. */
interface ExecuteHookResult {
  onExecuteDone?: (payload: { args: ExecutionArgs; result: ExecutionResult; setResult(result: ExecutionResult): void }) => unknown;
}

/** A plugin as the compiler reads it (the members of envelop's Plugin it looks at). */
export interface HookedPlugin {
  onExecute?: unknown;
  onEnveloped?: unknown;
  instrumentation?: unknown;
}

/** A compiled chain: runs the hooks and the execution for `args`; a promise only when a hook or the execution returned one. */
export type CompiledExecute = (args: ExecutionArgs) => ExecutionResult | Promise<ExecutionResult>;

type Hook = (payload: ExecutePayload) => unknown;

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as { then?: unknown } | null | undefined)?.then === 'function';
}

/**
 * The execute chain of `plugins` (in their order), or null when a plugin has `onEnveloped` or `instrumentation`
 * hooks (envelop's own execute must run then). Throws nothing; the chain throws (or rejects with) what a hook or
 * the execution throws.
 */
export function compileExecuteHooks(plugins: readonly HookedPlugin[]): CompiledExecute | null {
  if (plugins.some((p) => p.onEnveloped !== undefined || p.instrumentation !== undefined)) return null;
  const owners = plugins.filter((p) => typeof p.onExecute === 'function');
  const hooks: Hook[] = owners.map((p) => (payload) => (p.onExecute as (this: HookedPlugin, payload: ExecutePayload) => unknown).call(p, payload));

  return function run(args: ExecutionArgs): ExecutionResult | Promise<ExecutionResult> {
    const context = (args.contextValue ?? {}) as Record<string, unknown>;
    if (args.contextValue !== context) args = { ...args, contextValue: context };
    let executeFn: (args: ExecutionArgs) => unknown = noEngine;
    let stopped = false;
    let result: ExecutionResult | undefined;
    const after: ExecuteHookResult[] = [];
    const setExecuteFn = (fn: (args: ExecutionArgs) => unknown) => {
      executeFn = fn;
    };
    const setResultAndStopExecution = (r: ExecutionResult) => {
      result = r;
      stopped = true;
    };
    const extendContext = (extension: Record<string, unknown>) => {
      if (typeof extension !== 'object') throw new Error(`Invalid context extension provided! Expected "object", got: "${JSON.stringify(extension)}" (${typeof extension})`);
      Object.assign(context, extension);
    };
    // Each hook its own payload, as envelop: its `executeFn` stays the one in force when it was called.
    const payload = (): ExecutePayload => ({ executeFn, setExecuteFn, setResultAndStopExecution, context, extendContext, args });

    const before = (from: number): void | Promise<void> => {
      for (let i = from; i < hooks.length; i++) {
        const returned = hooks[i]!(payload());
        if (isPromiseLike(returned)) {
          return Promise.resolve(returned).then((r) => {
            if (r) after.push(r as ExecuteHookResult);
            if (!stopped) return before(i + 1);
          });
        }
        if (returned) after.push(returned as ExecuteHookResult);
        if (stopped) return;
      }
    };

    const done = (from: number, value: ExecutionResult): ExecutionResult | Promise<ExecutionResult> => {
      let current = value;
      const setResult = (r: ExecutionResult) => {
        current = r;
      };
      for (let i = from; i < after.length; i++) {
        const onDone = after[i]!.onExecuteDone;
        if (!onDone) continue;
        const returned = onDone({ args, result: current, setResult });
        if (isPromiseLike(returned)) {
          return Promise.resolve(returned).then((r) => {
            streamHandlersRefused(r, current);
            return done(i + 1, current);
          });
        }
        streamHandlersRefused(returned, current);
      }
      return current;
    };

    const executed = (): ExecutionResult | Promise<ExecutionResult> => {
      if (result) return done(0, result); // a stop with a falsy result executes anyway, as envelop
      const out = executeFn(args);
      if (isPromiseLike(out)) return Promise.resolve(out).then((r) => done(0, r as ExecutionResult));
      return done(0, out as ExecutionResult);
    };

    const waiting = before(0);
    return waiting ? waiting.then(executed) : executed();
  };
}

/** Envelop's executeFn before `useEngine` set one. */
function noEngine(): never {
  throw new Error('No `execute` function found! Register it using "useEngine" plugin.');
}

/** Stream handlers (`onNext`/`onEnd`) for a stream result cannot be honoured here (a route's result never is one): refused loudly. */
function streamHandlersRefused(returned: unknown, result: unknown): void {
  const r = returned as { onNext?: unknown; onEnd?: unknown } | undefined;
  if (r && (r.onNext !== undefined || r.onEnd !== undefined) && isAsyncIterable(result)) {
    throw new Error('an onExecuteDone hook asked for the events of a streamed result, which a REST route never has');
  }
}
