/* dis_types.h -- softnic's DIS base types used by the SISCI API (libsisci.so).
 *
 * Written for softnic; the reference names these types without defining them,
 * so their definitions are ours (and documented here):
 *
 * - dis_nodeId_list_t: the node ids of a named adapter, an array read as
 *   list[i] up to the first 0 (SCIGetNodeIdByAdapterName,
 *   SCIGetNodeInfoByAdapterName).  Every softnic adapter has one node id, so
 *   list[0] is the id and list[1] is 0.
 * - dis_virt_adapter_t: what kind of adapter a name denotes.  softnic adapters
 *   are DIS_VIRT_ADAPTER_SOFTNIC (shared memory and the network engine, no
 *   PCIe hardware).
 */
#ifndef _DIS_TYPES_H
#define _DIS_TYPES_H

#define DIS_NODEID_LIST_LEN 8

typedef unsigned int dis_nodeId_list_t[DIS_NODEID_LIST_LEN];

typedef enum dis_virt_adapter_t {
    DIS_VIRT_ADAPTER_UNKNOWN = 0,
    DIS_VIRT_ADAPTER_PHYSICAL = 1,
    DIS_VIRT_ADAPTER_VIRTUAL = 2,
    DIS_VIRT_ADAPTER_SOFTNIC = 3
} dis_virt_adapter_t;

#endif /* _DIS_TYPES_H */
