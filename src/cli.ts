#!/usr/bin/env node
import { leaveOutGeneratedApi } from './kube/lean-client-node.js';

// Before anything loads client-node: the rest of the program is imported after the hook.
leaveOutGeneratedApi();
await import('./main.js');
