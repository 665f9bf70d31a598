/* The Cray environment contract after PMI_Init: PMI_GNI_PTAG, _COOKIE,
 * _DEV_ID identical on all ranks, PMI_GNI_LOC_ADDR = this rank's nid. */
#include "pmitest.h"

static long dec(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) SN_FAIL("%s not set after PMI_Init", name);
    char *end;
    long x = strtol(v, &end, 10);
    if (*end) SN_FAIL("%s=%s is not decimal", name, v);
    return x;
}

int main(void)
{
    int rank, size, nid, r;
    pmitest_init(&rank, &size);
    long ptag = dec("PMI_GNI_PTAG"), cookie = dec("PMI_GNI_COOKIE");
    CHECK(ptag > 0 && ptag < 256);
    CHECK(cookie != 0);
    CHECK_EQ(dec("PMI_GNI_DEV_ID"), 0);
    PMI_OK(PMI_Get_nid(rank, &nid));
    CHECK_EQ(dec("PMI_GNI_LOC_ADDR"), nid);

    uint64_t h[3] = {fnv1a(getenv("PMI_GNI_PTAG")), fnv1a(getenv("PMI_GNI_COOKIE")), fnv1a(getenv("PMI_GNI_DEV_ID"))};
    uint64_t *all = malloc(sizeof h * size);
    PMI_OK(PMI_Allgather(h, all, sizeof h));
    for (r = 0; r < size; r++)
        if (memcmp(&all[3 * r], h, sizeof h) != 0) SN_FAIL("rank %d sees a different PMI_GNI_* contract", r);
    PMI_OK(PMI_Finalize());
    printf("pmi_env: rank %d ptag %ld cookie %#lx loc_addr %d ok\n", rank, ptag, cookie, nid);
    return 0;
}
