/**
 * What spec-guard's processes load in place of `@kubernetes/client-node`'s generated API
 * (`dist/gen/index.js`, its ~900 model and API classes): the two names the KubeConfig module
 * imports from it, for `makeApiClient` alone, which spec-guard never calls. Leaving them out
 * keeps about 16 MB off the live heap every major collection marks (docs/decisions.md).
 */
const LEFT_OUT =
  "client-node's generated API clients are not loaded in spec-guard (src/kube/lean-client-node.ts); KubeConfig.makeApiClient is not available, use KubeClient";

export function createConfiguration(): never {
  throw new Error(LEFT_OUT);
}

export class ServerConfiguration {
  constructor() {
    throw new Error(LEFT_OUT);
  }
}
