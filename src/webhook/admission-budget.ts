import { HttpError, type LargeBodyBudget } from './body.js';

/** A review larger than this is "large": real Applications are far smaller. */
export const LARGE_REVIEW_BYTES = 256 * 1024;
/** Large reviews read and parsed at once; more are refused with 429, before their body is read. */
export const MAX_LARGE_IN_FLIGHT = 2;
/** A review not decided this long after it arrived is answered 503: the apiserver gives up at 3 s. */
export const ADMISSION_DEADLINE_MS = 2500;

/**
 * Admission's concurrency budget. Parsing is synchronous, so a flood of multi-megabyte
 * reviews (anyone can post them to the webhook port) would hold the event loop while the
 * agent's small writes wait past the apiserver's timeout and land unstamped. Large reviews
 * get a small budget of their own; small ones never wait for them.
 */
export class AdmissionBudget implements LargeBodyBudget {
  readonly largeBytes = LARGE_REVIEW_BYTES;
  private large = 0;

  /** Takes a large-review slot, or throws 429. */
  enterLarge(): void {
    if (this.large >= MAX_LARGE_IN_FLIGHT) {
      throw new HttpError(429, `too many large admission reviews in flight (over ${LARGE_REVIEW_BYTES} bytes, ${MAX_LARGE_IN_FLIGHT} at a time); retry`);
    }
    this.large++;
  }

  leaveLarge(): void {
    this.large--;
  }

  /** Throws 503 when a review waited past the deadline: answering it now helps nobody. */
  checkDeadline(arrivedAt: number, now = Date.now()): void {
    if (now - arrivedAt > ADMISSION_DEADLINE_MS) throw new HttpError(503, `spec-guard is overloaded: this review waited ${now - arrivedAt} ms; retry`);
  }
}
