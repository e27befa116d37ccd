// The console's logo and icons: inline SVG (nothing loaded from elsewhere, allowed by the CSP), drawn
// in currentColor so they follow the theme. Decorative: the links they sit in carry the text.
import type { ComponentChildren } from 'preact';

function Svg({ children, size = 18 }: { children: ComponentChildren; size?: number }) {
  return (
    <svg
      width={size}
      height={size}
      viewBox="0 0 24 24"
      fill="none"
      stroke="currentColor"
      stroke-width="2"
      stroke-linecap="round"
      stroke-linejoin="round"
      aria-hidden="true"
    >
      {children}
    </svg>
  );
}

/** A hexagon with a spark: a token being minted. */
export const Logo = () => (
  <svg width="26" height="26" viewBox="0 0 32 32" aria-hidden="true" class="logo">
    <path d="M16 2 28 9v14l-12 7L4 23V9z" fill="var(--accent)" />
    <path d="M16 9v14M9 13l7 4 7-4" fill="none" stroke="var(--accent-text)" stroke-width="2.4" stroke-linecap="round" stroke-linejoin="round" />
  </svg>
);

export const ChainIcon = () => (
  <Svg>
    <path d="M10 13a5 5 0 0 0 7.5.5l3-3a5 5 0 0 0-7-7l-1.7 1.7" />
    <path d="M14 11a5 5 0 0 0-7.5-.5l-3 3a5 5 0 0 0 7 7l1.7-1.7" />
  </Svg>
);

export const AuditIcon = () => (
  <Svg>
    <path d="M12 3 4 6v6c0 5 3.4 8.3 8 9 4.6-.7 8-4 8-9V6z" />
    <path d="m9 12 2 2 4-4" />
  </Svg>
);

export const SignOutIcon = () => (
  <Svg>
    <path d="M9 21H5a2 2 0 0 1-2-2V5a2 2 0 0 1 2-2h4" />
    <path d="m16 17 5-5-5-5M21 12H9" />
  </Svg>
);

export const AppsIcon = () => (
  <Svg>
    <rect x="3" y="3" width="7" height="7" rx="1.5" />
    <rect x="14" y="3" width="7" height="7" rx="1.5" />
    <rect x="3" y="14" width="7" height="7" rx="1.5" />
    <rect x="14" y="14" width="7" height="7" rx="1.5" />
  </Svg>
);

export const CopyIcon = () => (
  <Svg size={14}>
    <rect x="9" y="9" width="12" height="12" rx="2" />
    <path d="M5 15H4a1 1 0 0 1-1-1V4a1 1 0 0 1 1-1h10a1 1 0 0 1 1 1v1" />
  </Svg>
);

export const CheckIcon = () => (
  <Svg size={14}>
    <path d="m5 12 5 5L20 7" />
  </Svg>
);

export const ArrowIcon = () => (
  <Svg size={14}>
    <path d="M5 12h14m-6-6 6 6-6 6" />
  </Svg>
);
