/* p3nal_ibng.h -- softnic's Portals 3 NAL header for the "ibng" interface.
 *
 * Included first (-DP3_NAL='<p3nal_ibng.h>'), it names PTL_IFACE_DEFAULT
 * PTL_IFACE_IBNG.  softnic has one interface, the node fabric, whichever
 * NAL header names it: PTL_IFACE_IBNG0 and PTL_IFACE_UTCP0 both open it.
 * Written from the ABI facts; not a copy of any vendor header.
 */
#ifndef _PTL3_P3NAL_IBNG_H_
#define _PTL3_P3NAL_IBNG_H_

#define PTL_IFACE_IBNG  PTL_NALTYPE_IBNG
#define PTL_IFACE_IBNG0 PTL_NALTYPE_IBNG0

#ifndef PTL_IFACE_DEFAULT
#define PTL_IFACE_DEFAULT PTL_IFACE_IBNG
#endif

#include <portals3.h>

#endif /* _PTL3_P3NAL_IBNG_H_ */
