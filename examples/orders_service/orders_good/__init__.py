"""The orders consumer done right (RETRY_DOCTRINE.md): bounded, backed off, jittered, capped,
permanent errors dead-lettered at once, dead letters with context, and a rate-limited replay."""
