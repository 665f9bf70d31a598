/* sisci_error.h -- softnic's Dolphin SISCI error codes (libsisci.so).
 *
 * Written for softnic from the ABI facts (names and values); it is not a copy
 * of any vendor header.  Included by sisci_types.h and sisci_api.h; see the
 * top comment of sisci_api.h for how the library behaves.
 *
 * Every code but SCI_ERR_OK has bit 30 (SISCI_ERR_MASK) set.  Two names share
 * a value on purpose: SCI_ERR_NO_SUCH_SEGMENT and SCI_ERR_NO_SUCH_INTNO are
 * both 0x4000090C, so SCIGetErrorString cannot tell them apart.  Values the
 * reference leaves open: SCI_ERR_EWOULD_BLOCK 0x40000B01 and
 * SCI_ERR_SEMAPHORE_COUNT_EXCEEDED 0x40000B06 (unused codes of their range);
 * the library never returns either.
 */
#ifndef _SISCI_ERROR_H_
#define _SISCI_ERROR_H_

#define SISCI_ERR_MASK      0x40000000
#define SCI_ERR_MASK        0x40000000
/* Remote errors have bit 0 set. */
#define SCI_ERR_REMOTE_MASK 0x01
/* An error code with bit 31 cleared. */
#define SCI_ERR(u)          ((unsigned int)(u) & 0x7FFFFFFF)

typedef enum sci_error_t {
    SCI_ERR_OK                       = 0x00000000,
    SCI_ERR_BUSY                     = 0x40000900,
    SCI_ERR_FLAG_NOT_IMPLEMENTED     = 0x40000901,
    SCI_ERR_ILLEGAL_FLAG             = 0x40000902,
    SCI_ERR_NOSPC                    = 0x40000904,
    SCI_ERR_API_NOSPC                = 0x40000905,
    SCI_ERR_HW_NOSPC                 = 0x40000906,
    SCI_ERR_NOT_IMPLEMENTED          = 0x40000907,
    SCI_ERR_ILLEGAL_ADAPTERNO        = 0x40000908,
    SCI_ERR_NO_SUCH_ADAPTERNO        = 0x40000909,
    SCI_ERR_TIMEOUT                  = 0x4000090A,
    SCI_ERR_OUT_OF_RANGE             = 0x4000090B,
    SCI_ERR_NO_SUCH_SEGMENT          = 0x4000090C,
    SCI_ERR_NO_SUCH_INTNO            = 0x4000090C,
    SCI_ERR_ILLEGAL_NODEID           = 0x4000090D,
    SCI_ERR_CONNECTION_REFUSED       = 0x4000090E,
    SCI_ERR_SEGMENT_NOT_CONNECTED    = 0x4000090F,
    SCI_ERR_SIZE_ALIGNMENT           = 0x40000910,
    SCI_ERR_OFFSET_ALIGNMENT         = 0x40000911,
    SCI_ERR_ILLEGAL_PARAMETER        = 0x40000912,
    SCI_ERR_MAX_ENTRIES              = 0x40000913,
    SCI_ERR_SEGMENT_NOT_PREPARED     = 0x40000914,
    SCI_ERR_ILLEGAL_ADDRESS          = 0x40000915,
    SCI_ERR_ILLEGAL_OPERATION        = 0x40000916,
    SCI_ERR_ILLEGAL_QUERY            = 0x40000917,
    SCI_ERR_SEGMENTID_USED           = 0x40000918,
    SCI_ERR_SYSTEM                   = 0x40000919,
    SCI_ERR_CANCELLED                = 0x4000091A,
    SCI_ERR_NOT_CONNECTED            = 0x4000091B,
    SCI_ERR_NOT_AVAILABLE            = 0x4000091C,
    SCI_ERR_INCONSISTENT_VERSIONS    = 0x4000091D,
    SCI_ERR_COND_INT_RACE_PROBLEM    = 0x4000091E,
    SCI_ERR_OVERFLOW                 = 0x4000091F,
    SCI_ERR_NOT_INITIALIZED          = 0x40000920,
    SCI_ERR_ACCESS                   = 0x40000921,
    SCI_ERR_NOT_SUPPORTED            = 0x40000922,
    SCI_ERR_DEPRECATED               = 0x40000923,
    SCI_ERR_DMA_NOT_AVAILABLE        = 0x40000924,
    SCI_ERR_DMA_DISABLED             = 0x40000925,
    SCI_ERR_NO_SUCH_NODEID           = 0x40000A00,
    SCI_ERR_NODE_NOT_RESPONDING      = 0x40000A02,
    SCI_ERR_NO_REMOTE_LINK_ACCESS    = 0x40000A04,
    SCI_ERR_NO_LINK_ACCESS           = 0x40000A05,
    SCI_ERR_TRANSFER_FAILED          = 0x40000A06,
    SCI_ERR_EWOULD_BLOCK             = 0x40000B01,
    SCI_ERR_SEMAPHORE_COUNT_EXCEEDED = 0x40000B06,
    SCI_ERR_IRQL_ILLEGAL             = 0x40000B02,
    SCI_ERR_REMOTE_BUSY              = 0x40000B00,
    SCI_ERR_LOCAL_BUSY               = 0x40000B03,
    SCI_ERR_ALL_BUSY                 = 0x40000B04,
    SCI_ERR_NO_SUCH_FDID             = 0x40000B05
} sci_error_t;

#endif /* _SISCI_ERROR_H_ */
