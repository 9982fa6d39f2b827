"""The gate's writes, one module per use case.

`gate` checks tickets in and renews them (the rules themselves are declared in `checkin.rules`;
`admission` is the one-statement check-in), `scans` applies an online scan once per scan id
(CONTRACT §7, retry-safe scans), `batch` applies a scanner's upload (`batch_chunk` holds a
chunk's bulk writes), `page_tokens` issues the staff check-in page's tokens."""
