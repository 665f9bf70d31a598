/* sisci_types.h -- softnic's Dolphin SISCI types (libsisci.so).
 *
 * Written for softnic from the ABI facts (names, values, field order and
 * types of the current DIS API: sizes and offsets are size_t, sci_ioaddr_t is
 * 64 bits); it is not a copy of any vendor header.  See the top comment of
 * sisci_api.h for how the library behaves.
 *
 * Values the reference leaves open, chosen here and kept stable:
 * - MAX_CB_REASON is SCI_CB_LOST (5), as in the 1.10 header; SCI_CB_FATAL (6)
 *   follows it.
 * - DIS_DMA_MAX_VECLEN is 256: the most entries SCIStartDmaTransferVec takes
 *   (also max_vector_length of every DMA mode's capabilities).
 * - sci_dma_type_t: DONTCARE 1, ADAPTER 2, GLOBAL 3, SYSTEM 4, TRANSPARENT 5
 *   (today's values) and SLAVE 6.
 */
#ifndef _SISCI_TYPES_H
#define _SISCI_TYPES_H

#include "dis_types.h"
#include "sisci_error.h"

#ifndef IN
#define IN
#endif
#ifndef OUT
#define OUT
#endif
#ifndef IN_OUT
#define IN_OUT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handles (never dereferenced by programs). */
typedef struct sci_desc                  *sci_desc_t;
typedef struct sci_local_segment         *sci_local_segment_t;
typedef struct sci_remote_segment        *sci_remote_segment_t;
typedef struct sci_map                   *sci_map_t;
typedef struct sci_sequence              *sci_sequence_t;
typedef struct sci_dma_queue             *sci_dma_queue_t;
typedef struct sci_dma_channel           *sci_dma_channel_t;
typedef struct sci_remote_interrupt      *sci_remote_interrupt_t;
typedef struct sci_local_interrupt       *sci_local_interrupt_t;
typedef struct sci_remote_data_interrupt *sci_remote_data_interrupt_t;
typedef struct sci_local_data_interrupt  *sci_local_data_interrupt_t;
typedef struct sci_smartio_device        *sci_smartio_device_t;
/* SISCI 1.10's block-transfer handle (SCITransferBlockAsync). */
typedef struct sci_block_transfer        *sci_block_transfer_t;

typedef unsigned long long sci_ioaddr_t;

typedef enum sci_segment_cb_reason_t {
    SCI_CB_CONNECT = 1,
    SCI_CB_DISCONNECT,
    SCI_CB_NOT_OPERATIONAL,
    SCI_CB_OPERATIONAL,
    SCI_CB_LOST,
    SCI_CB_FATAL
} sci_segment_cb_reason_t;

#define MAX_CB_REASON SCI_CB_LOST

typedef enum sci_dma_queue_state_t {
    SCI_DMAQUEUE_IDLE,
    SCI_DMAQUEUE_GATHER,
    SCI_DMAQUEUE_POSTED,
    SCI_DMAQUEUE_DONE,
    SCI_DMAQUEUE_ABORTED,
    SCI_DMAQUEUE_ERROR
} sci_dma_queue_state_t;

typedef enum sci_dma_type_t {
    SCI_DMA_TYPE_DONTCARE = 1,
    SCI_DMA_TYPE_ADAPTER = 2,
    SCI_DMA_TYPE_GLOBAL = 3,
    SCI_DMA_TYPE_SYSTEM = 4,
    SCI_DMA_TYPE_TRANSPARENT = 5,
    SCI_DMA_TYPE_SLAVE = 6
} sci_dma_type_t;

typedef enum sci_sequence_status_t {
    SCI_SEQ_OK,
    SCI_SEQ_RETRIABLE,
    SCI_SEQ_NOT_RETRIABLE,
    SCI_SEQ_PENDING
} sci_sequence_status_t;

typedef enum sci_callback_action_t {
    SCI_CALLBACK_CANCEL = 1,
    SCI_CALLBACK_CONTINUE
} sci_callback_action_t;

typedef sci_callback_action_t (*sci_cb_local_segment_t)(void *arg, sci_local_segment_t segment,
        sci_segment_cb_reason_t reason, unsigned int nodeId, unsigned int localAdapterNo, sci_error_t error);
typedef sci_callback_action_t (*sci_cb_remote_segment_t)(void *arg, sci_remote_segment_t segment,
        sci_segment_cb_reason_t reason, sci_error_t status);
typedef sci_callback_action_t (*sci_cb_dma_t)(void IN *arg, sci_dma_queue_t queue, sci_error_t status);
typedef sci_callback_action_t (*sci_cb_interrupt_t)(void *arg, sci_local_interrupt_t interrupt, sci_error_t status);
typedef sci_callback_action_t (*sci_cb_data_interrupt_t)(void *arg, sci_local_data_interrupt_t interrupt,
        void *data, unsigned int length, sci_error_t status);
typedef sci_callback_action_t (*sci_cb_device_segment_t)(void *arg, sci_smartio_device_t device, sci_error_t status);
typedef sci_callback_action_t (*sci_cb_device_mapping_t)(void *arg, sci_smartio_device_t device, sci_error_t status);
/* SISCI 1.10's block-transfer callback. */
typedef int (*sci_cb_block_transfer_t)(void *arg, sci_block_transfer_t block, sci_error_t status);

#define DIS_DMA_MAX_VECLEN 256

/* One entry of SCIStartDmaTransferVec. */
typedef struct dis_dma_vec_t {
    unsigned int size;
    unsigned int local_offset;
    unsigned int remote_offset;
    unsigned int flags;
} dis_dma_vec_t;

/* An interconnect address: node id = bits 63..48, offsHi = 47..32, offsLo = 31..0. */
typedef struct sci_address_t {
    unsigned short nodeId;
    unsigned short offsHi;
    unsigned int   offsLo;
} sci_address_t;

typedef struct sci_dma_capabilities_t {
    unsigned int num_channels;
    unsigned int max_transfer_size;
    unsigned int max_vector_length;
    unsigned int support_mem2io;
    unsigned int support_io2mem;
    unsigned int support_io2io;
    unsigned int min_align_bytes;
    unsigned int suggested_align_bytes;
} sci_dma_capabilities_t;

/* SCIQuery data for SCI_Q_VENDORID, SCI_Q_API, SCI_Q_SISCI_DRIVER_VERSION. */
typedef struct sci_query_string_t {
    char *str;
    unsigned int length;
} sci_query_string_t;

/* SCIQuery data for SCI_Q_ADAPTER: the answer is written through `data`. */
typedef struct sci_query_adapter_t {
    unsigned int localAdapterNo;
    unsigned int portNo;
    unsigned int subcommand;
    void *data;
} sci_query_adapter_t;

/* SCIQuery data for SCI_Q_SYSTEM. */
typedef struct sci_query_system_t {
    unsigned int subcommand;
    void *data;
} sci_query_system_t;

/* SCIQuery data for SCI_Q_DMA (the mode is given in SCIQuery's flags). */
typedef struct sci_query_dma_t {
    unsigned int localAdapterNo;
    unsigned int subcommand;
    void *data;
} sci_query_dma_t;

/* SCIQuery data for SCI_Q_LOCAL_SEGMENT: the answer is data.ioaddr. */
typedef struct sci_query_local_segment_t {
    sci_local_segment_t segment;
    unsigned int subcommand;
    union {
        sci_ioaddr_t ioaddr;
    } data;
} sci_query_local_segment_t;

/* SCIQuery data for SCI_Q_REMOTE_SEGMENT: the answer is data.ioaddr. */
typedef struct sci_query_remote_segment_t {
    sci_remote_segment_t segment;
    unsigned int subcommand;
    union {
        sci_ioaddr_t ioaddr;
    } data;
} sci_query_remote_segment_t;

/* SCIQuery data for SCI_Q_MAP: the answer is data. */
typedef struct sci_query_map_t {
    sci_map_t map;
    unsigned int subcommand;
    unsigned long long data;
} sci_query_map_t;

typedef struct sci_smartio_device_info_t {
    unsigned long long fdid;
    unsigned short pci_device_id;
    unsigned short pci_vendor_id;
    unsigned int pci_class;
    unsigned short pci_subsystem_device_id;
    unsigned short pci_subsystem_vendor_id;
    unsigned long long pci_serial_number;
    unsigned short remote_bdf;
    unsigned short local_bdf;
    unsigned int adapter;
    unsigned int nodeid;
    int physical_slot;
    char user_name[64];
    char uuid[37];
} sci_smartio_device_info_t;

/* SCIQuery data for SCI_Q_DEVICE. */
typedef struct sci_smartio_query_device_t {
    unsigned long long fdid;
    unsigned int subcommand;
    void *data;
} sci_smartio_query_device_t;

#ifdef __cplusplus
}
#endif

#endif /* _SISCI_TYPES_H */
