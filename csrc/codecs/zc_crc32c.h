/* CRC-32C (Castagnoli), the checksum of the zarr crc32c codec. */
#ifndef ZC_CRC32C_H
#define ZC_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Continue the finished CRC `crc` (0 to start) over `len` bytes at `data`; chaining
 * calls over consecutive pieces gives the CRC of the whole. */
uint32_t zc_crc32c(uint32_t crc, const void *data, size_t len);

/* The same, always through the slicing-by-8 tables (lets tests cover the fallback). */
uint32_t zc_crc32c_portable(uint32_t crc, const void *data, size_t len);

#endif
