// Saving what the charts show: CSV of the metric table, PNG of one chart.
import type uPlot from 'uplot';
import type { SeriesSpec } from './chartData';

export function saveBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

export function saveDataUrl(dataUrl: string, fileName: string): void {
  const a = document.createElement('a');
  a.href = dataUrl;
  a.download = fileName;
  document.body.appendChild(a);
  a.click();
  a.remove();
}

/**
 * The chart as a PNG data URL: uPlot's canvas (axes and curves) on the panel colour, with the
 * title above and the legend below, so the image reads on its own in a slide or a paper.
 */
export function chartPng(u: uPlot, title: string, series: SeriesSpec[]): string {
  const src = u.ctx.canvas;
  const ratio = src.width / Math.max(1, u.width);
  const shown = series.filter((s) => !s.raw);
  const pad = 10 * ratio;
  const titleH = 24 * ratio;
  const legendH = shown.length * 18 * ratio + pad;
  const out = document.createElement('canvas');
  out.width = src.width + 2 * pad;
  out.height = src.height + titleH + legendH + pad;
  const ctx = out.getContext('2d')!;
  ctx.fillStyle = '#171b22';
  ctx.fillRect(0, 0, out.width, out.height);
  ctx.fillStyle = '#e6e9ef';
  ctx.font = `600 ${14 * ratio}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  ctx.fillText(title, pad, pad + titleH / 2);
  ctx.drawImage(src, pad, pad + titleH);
  ctx.font = `${12 * ratio}px system-ui, sans-serif`;
  shown.forEach((s, i) => {
    const y = pad + titleH + src.height + pad + i * 18 * ratio + 9 * ratio;
    ctx.strokeStyle = s.colour;
    ctx.lineWidth = 2 * ratio;
    ctx.setLineDash(s.dash.map((v) => v * ratio));
    ctx.beginPath();
    ctx.moveTo(pad, y);
    ctx.lineTo(pad + 24 * ratio, y);
    ctx.stroke();
    ctx.fillStyle = '#e6e9ef';
    ctx.fillText(s.label, pad + 32 * ratio, y);
  });
  return out.toDataURL('image/png');
}

export function fileSafe(s: string): string {
  return s.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, '') || 'chart';
}
