import module from 'node:module';

/** client-node's KubeConfig module, the only one spec-guard loads, and what it imports its generated API as. */
const KUBE_CONFIG_MODULE = import.meta.resolve('@kubernetes/client-node/dist/config.js');
const GENERATED_API = './gen/index.js';
const LEFT_OUT = new URL('./generated-api-left-out.js', import.meta.url).href;

interface ResolveContext {
  parentURL?: string;
}
interface Resolved {
  url: string;
  shortCircuit?: boolean;
}
type Resolve = (specifier: string, context: ResolveContext, next: (specifier: string, context: ResolveContext) => Resolved) => Resolved;
/** Node.js 24's synchronous module hooks (the project's @types/node is 20's, which lacks them). */
const registerHooks = (module as unknown as { registerHooks?: (hooks: { resolve: Resolve }) => unknown }).registerHooks;

/**
 * Loads client-node's KubeConfig without its generated API: the one import of
 * `./gen/index.js` from client-node's `config.js` resolves to `generated-api-left-out.js`.
 * Every other import resolves as always. Call it before anything imports client-node (the
 * entry point does, then imports the rest). Without module hooks it does nothing: the
 * generated API is then loaded, as it used to be.
 */
export function leaveOutGeneratedApi(): void {
  registerHooks?.({
    resolve: (specifier, context, next) =>
      specifier === GENERATED_API && context.parentURL === KUBE_CONFIG_MODULE ? { url: LEFT_OUT, shortCircuit: true } : next(specifier, context),
  });
}
