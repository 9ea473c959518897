export { createLogger, type Logger, type LogLevel } from './logger.js';
