/**
 * The compiled onExecute chain of the REST routes (src/rest/execute-hooks.ts) against envelop's own orchestrator:
 * the same plugins, run by both, must call the same hooks in the same order and give the same result.
 */
import { describe, expect, test } from 'vitest';
import { envelop, useEngine, type Plugin } from '@envelop/core';
import { buildSchema, execute, parse, validate, type ExecutionArgs, type ExecutionResult } from 'graphql';
import { compileExecuteHooks } from '../../src/rest/execute-hooks.js';

const schema = buildSchema('type Query { hello: String, who: String }');
const rootValue = { hello: () => 'world', who: (_a: unknown, ctx: { who?: string }) => ctx.who ?? null };
const document = parse('{ hello who }');

type Scenario = (log: string[]) => Plugin[];

/** Hooks that log, wait, extend the context, swap the execution, stop it or replace the result. */
const scenarios: Record<string, Scenario> = {
  'synchronous hooks, each with onExecuteDone': (log) => [
    { onExecute: () => void log.push('a') },
    { onExecute: () => (log.push('b'), { onExecuteDone: ({ result }) => void log.push(`b done ${JSON.stringify((result as ExecutionResult).data)}`) }) },
    { onExecute: () => (log.push('c'), { onExecuteDone: () => void log.push('c done') }) },
  ],
  'an async hook is waited for before the next one': (log) => [
    { onExecute: async () => void (await new Promise((r) => setTimeout(r, 5)), log.push('slow')) },
    { onExecute: () => void log.push('after slow') },
  ],
  'extendContext reaches the resolvers': (log) => [
    { onExecute: ({ extendContext }) => (log.push('extend'), extendContext({ who: 'extended' })) },
  ],
  'setExecuteFn swaps the execution, later hooks see it': (log) => [
    {
      onExecute: ({ setExecuteFn, executeFn }) =>
        setExecuteFn(async (args: ExecutionArgs) => (log.push('wrapped'), { ...((await executeFn(args)) as ExecutionResult), extensions: { wrapped: true } })),
    },
    { onExecute: ({ executeFn }) => void log.push(`sees ${executeFn.name || 'anonymous'}`) },
  ],
  'setResultAndStopExecution skips the later hooks and the execution; earlier onExecuteDone still run': (log) => [
    { onExecute: () => (log.push('first'), { onExecuteDone: ({ result }) => void log.push(`first done ${JSON.stringify(result)}`) }) },
    { onExecute: async ({ setResultAndStopExecution }) => (log.push('stops'), setResultAndStopExecution({ errors: [] as never, data: null })) },
    { onExecute: () => void log.push('never') },
  ],
  'a synchronous stop skips the later hooks too': (log) => [
    { onExecute: ({ setResultAndStopExecution }) => (log.push('stops at once'), setResultAndStopExecution({ data: { hello: 'stopped' } })) },
    { onExecute: () => void log.push('never') },
  ],
  'a hook that stops and returns onExecuteDone gets it called with its own result': (log) => [
    {
      onExecute: ({ setResultAndStopExecution }) => (
        log.push('stops with done'), setResultAndStopExecution({ data: { hello: 'mine' } }), { onExecuteDone: ({ result }) => void log.push(`own done ${JSON.stringify(result)}`) }
      ),
    },
  ],
  'a stop with a falsy result executes anyway': (log) => [
    { onExecute: ({ setResultAndStopExecution }) => (log.push('stops with nothing'), setResultAndStopExecution(undefined as never)) },
    { onExecute: () => void log.push('never') },
  ],
  'stream handlers returned for a single result are ignored': (log) => [
    { onExecute: () => ({ onExecuteDone: () => (log.push('asks for events'), { onNext: () => void log.push('next'), onEnd: () => void log.push('end') }) }) },
  ],
  'extendContext(null) changes nothing; a string is refused': (log) => [
    { onExecute: ({ extendContext }) => (log.push('null'), extendContext(null as never)) },
    { onExecute: ({ extendContext }) => (log.push('string'), extendContext('x' as never)) },
  ],
  'onExecuteDone replaces the result, async or not': (log) => [
    { onExecute: () => ({ onExecuteDone: ({ result, setResult }) => (log.push('sync set'), setResult({ ...result, extensions: { n: 1 } })) }) },
    {
      onExecute: () => ({
        onExecuteDone: async ({ result, setResult }) => {
          await Promise.resolve();
          log.push(`async sees ${JSON.stringify((result as ExecutionResult).extensions ?? null)}`);
          setResult({ ...result, data: { hello: 'replaced' } });
        },
      }),
    },
  ],
  'a throwing hook rejects the execution': (log) => [
    { onExecute: () => void log.push('before') },
    {
      onExecute: () => {
        throw new Error('hook failed');
      },
    },
  ],
};

async function outcome(run: (args: ExecutionArgs) => unknown, contextValue: Record<string, unknown>) {
  try {
    return { result: JSON.parse(JSON.stringify(await run({ schema, document, rootValue, contextValue }))) };
  } catch (e) {
    return { thrown: (e as Error).message };
  }
}

describe('compiled execute hooks', () => {
  for (const [name, scenario] of Object.entries(scenarios)) {
    test(`${name}: same hooks, order and result as envelop`, async () => {
      const theirs: string[] = [];
      const engine = useEngine({ parse, validate, execute, subscribe: execute as never });
      const enveloped = envelop({ plugins: [engine, ...scenario(theirs)] })();
      const expected = await outcome(enveloped.execute as never, {});

      const ours: string[] = [];
      const compiled = compileExecuteHooks([engine, ...scenario(ours)] as never);
      expect(compiled).not.toBeNull();
      const got = await outcome(compiled!, {});

      expect(got).toEqual(expected);
      expect(ours).toEqual(theirs);
      expect(ours.length + Object.keys(got).length).toBeGreaterThan(1); // each scenario logs or answers something
    });
  }

  test('without useEngine, the same error as envelop', async () => {
    const plugins = (): Plugin[] => [{ onExecute: () => undefined }];
    const expected = await outcome(envelop({ plugins: plugins() })().execute as never, {});
    expect(expected.thrown).toMatch(/No `execute` function found/);
    expect(await outcome(compileExecuteHooks(plugins() as never)!, {})).toEqual(expected);
  });

  test('a synchronous chain answers without a promise', () => {
    const compiled = compileExecuteHooks([useEngine({ execute }) as never, { onExecute: () => ({ onExecuteDone: () => undefined }) }]);
    const out = compiled!({ schema, document, rootValue, contextValue: {} });
    expect(out).not.toBeInstanceOf(Promise);
    expect((out as ExecutionResult).data).toEqual({ hello: 'world', who: null });
  });

  test('plugins with instrumentation or onEnveloped hooks are left to envelop', () => {
    expect(compileExecuteHooks([{ onExecute: () => undefined }, { instrumentation: {} }])).toBeNull();
    expect(compileExecuteHooks([{ onEnveloped: () => undefined }])).toBeNull();
  });
});
