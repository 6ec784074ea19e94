import { encode } from "uqr";

/** A QR code drawn as SVG rectangles (no image, no inline markup): what a login's display_and_wait step shows. */
export function Qr({ data, label }: { data: string; label: string }) {
  const { data: rows, size } = encode(data, { ecc: "M", border: 2 });
  const cells: string[] = [];
  rows.forEach((row, y) => row.forEach((dark, x) => dark && cells.push(`M${x} ${y}h1v1h-1z`)));
  return (
    <svg
      class="qr"
      viewBox={`0 0 ${size} ${size}`}
      role="img"
      aria-label={label}
      data-qr={data}
      shape-rendering="crispEdges"
    >
      <rect width={size} height={size} fill="#fff" />
      <path d={cells.join("")} fill="#000" />
    </svg>
  );
}
