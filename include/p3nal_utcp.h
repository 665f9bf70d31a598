/* p3nal_utcp.h -- softnic's Portals 3 NAL header for the "utcp" interfaces.
 *
 * Reference-implementation programs include it through -DP3_NAL='<p3nal_utcp.h>'
 * (#include P3_NAL); the first NAL header included names PTL_IFACE_DEFAULT.
 * In softnic the interface is the node fabric (shared memory on this machine,
 * the network engine across machines), not a TCP socket: only
 * one interface exists, named PTL_IFACE_UTCP0 (= PTL_IFACE_DEFAULT) or
 * PTL_IFACE_IBNG0 (<p3nal_ibng.h>).  Written from the ABI facts;
 * not a copy of any vendor header.
 */
#ifndef _PTL3_P3NAL_UTCP_H_
#define _PTL3_P3NAL_UTCP_H_

#define PTL_IFACE_UTCP  PTL_NALTYPE_UTCP
#define PTL_IFACE_UTCP0 PTL_NALTYPE_UTCP0
#define PTL_IFACE_UTCP1 PTL_NALTYPE_UTCP1
#define PTL_IFACE_UTCP2 PTL_NALTYPE_UTCP2
#define PTL_IFACE_UTCP3 PTL_NALTYPE_UTCP3

#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT PTL_IFACE_UTCP
#endif

#include <portals3.h>

#endif /* _PTL3_P3NAL_UTCP_H_ */
