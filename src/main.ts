import { ConfigError } from './config/index.js';
import { UsageError } from './commands/flags.js';
import { checkConfig, checkConfigHelp } from './commands/check-config.js';
import { manifests, manifestsHelp } from './commands/manifests.js';
import { rotate, rotateHelp } from './commands/rotate.js';
import { serve, serveHelp } from './commands/serve.js';
import { status, statusHelp } from './commands/status.js';
import { exactNumbersSupported } from './kube/json.js';

const help = `spec-guard: keeps the guarded paths (.spec) of synced objects equal to their source of truth.

Usage: spec-guard <command> [flags]

Commands:
  serve          run the admission webhook (and, with a cluster, the watcher)
  check-config   validate a configuration file and print the effective policy
  manifests      print the webhook configurations for a configuration, as YAML
  status         show every guarded object's state, the leader and the store
  rotate         rotate the serving certificate (and with --ca the CA) now

Run 'spec-guard <command> --help' for the flags of a command.`;

type Command = (argv: string[]) => number | Promise<number>;
const commands: Record<string, { run: Command; help: string }> = {
  serve: { run: serve, help: serveHelp },
  'check-config': { run: checkConfig, help: checkConfigHelp },
  manifests: { run: manifests, help: manifestsHelp },
  status: { run: status, help: statusHelp },
  rotate: { run: rotate, help: rotateHelp },
};

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    console.log(help);
    return name ? 0 : 2;
  }
  const command = commands[name];
  if (command && !exactNumbersSupported) {
    // Integers beyond 2^53 would compare equal to their neighbours: a guard that can be fooled.
    console.error(`spec-guard: Node.js ${process.versions.node} cannot read JSON numbers exactly; run it on Node.js 24 (the image does)`);
    return 1;
  }
  if (!command) {
    console.error(`spec-guard: unknown command "${name}"\n\n${help}`);
    return 2;
  }
  try {
    return await command.run(rest);
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(err.message);
      return 2;
    }
    if (err instanceof UsageError) {
      console.error(`spec-guard ${name}: ${err.message}\n\n${command.help}`);
      return 2;
    }
    console.error(`spec-guard ${name}: ${(err as Error).message}`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    // serve keeps running: it sets its own exit code when it stops. A serve that failed to
    // start exits now, whatever it left open: a half-started guard must not linger.
    if (code !== -1) process.exitCode = code;
    if (code > 0 && process.argv[2] === 'serve') process.exit(code);
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
