// Run colours for overlays: the Okabe-Ito palette (distinguishable with the common colour-vision
// deficiencies), ordered for contrast on the dark theme.
export const RUN_COLOURS = ['#56b4e9', '#e69f00', '#009e73', '#d55e00', '#cc79a7', '#f0e442', '#6c8ebf', '#ffffff'];

export function runColour(index: number): string {
  return RUN_COLOURS[index % RUN_COLOURS.length];
}

/** Dash patterns that tell the metrics of one chart apart when several runs share a colour. */
export const METRIC_DASHES: number[][] = [[], [7, 4], [2, 3], [10, 3, 2, 3]];
