/**
 * Prints what a fault test measured on one indented line under its name, so a test run
 * shows the figures docs/reliability.md quotes.
 */
export function report(figures: Record<string, unknown>): void {
  console.log(`      ${JSON.stringify(figures)}`);
}
