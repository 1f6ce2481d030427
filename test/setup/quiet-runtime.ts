// Each test process installs the Temporal runtime once, logging only errors, before any
// worker or connection exists.
import { DefaultLogger, Runtime } from '@temporalio/worker';

Runtime.install({ logger: new DefaultLogger('ERROR') });
