export const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

/**
 * Server `i`'s figure over server `j`'s, round by round (`perRound[server][round]`): the two were
 * measured in the same round, so a noisy neighbour weighs on both alike. The median of these
 * ratios is the headline; their range shows how far one round can stray.
 */
export function roundRatios(perRound: number[][], i: number, j: number): { median: number; min: number; max: number } {
  const ratios = perRound[i]!.map((x, round) => x / perRound[j]![round]!);
  return { median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios) };
}
