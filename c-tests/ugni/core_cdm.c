/* uGNI core: communication domains, NIC attach, devices, versions, job calls.
 * Decisions tested (see ugni-sys/src/cdm.rs): device 0 and -1 only (else NO_MATCH);
 * attach twice -> INVALID_STATE; a (ptag, cookie) not in PMI_GNI_* and not added by
 * GNI_ConfigureJob -> PERMISSION_ERROR; a duplicate inst_id in one domain ->
 * INVALID_STATE; CdmDestroy invalidates the NIC handle; NTT -> PERMISSION_ERROR. */
#include "gnitest.h"

int main(void)
{
    int spawned, rank, size;
    CHECK(PMI_Init(&spawned) == PMI_SUCCESS);
    CHECK(PMI_Get_rank(&rank) == PMI_SUCCESS);
    CHECK(PMI_Get_size(&size) == PMI_SUCCESS);
    sntest_rank = rank;
    uint8_t ptag = (uint8_t)gnit_env("PMI_GNI_PTAG");
    uint32_t cookie = (uint32_t)gnit_env("PMI_GNI_COOKIE");
    uint32_t envaddr = (uint32_t)gnit_env("PMI_GNI_LOC_ADDR");

    /* Versions and devices. */
    uint32_t v = 0;
    GNI_OK(GNI_GetVersion(&v));
    CHECK_EQ(v, GNI_VERSION);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetVersion(NULL));
    gni_version_info_t vi;
    memset(&vi, 0x55, sizeof vi);
    GNI_OK(GNI_GetVersionInformation(&vi));
    CHECK_EQ(vi.ugni_version, GNI_VERSION);
    CHECK(memchr(vi.ugni_build_string, 0, sizeof vi.ugni_build_string) != NULL);
    int nd = -1, ids[2] = { -1, -1 };
    GNI_OK(GNI_GetNumLocalDevices(&nd));
    CHECK_EQ(nd, 1);
    GNI_OK(GNI_GetLocalDeviceIds(2, ids));
    CHECK_EQ(ids[0], 0);
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetLocalDeviceIds(0, ids));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_GetNumLocalDevices(NULL));
    uint32_t addr = 0, cpu = 99;
    GNI_OK(GNI_CdmGetNicAddress(0, &addr, &cpu));
    CHECK_EQ(addr, envaddr);
    CHECK_EQ(cpu, 0);
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_CdmGetNicAddress(1, &addr, &cpu));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmGetNicAddress(0, NULL, &cpu));
    gni_nic_device_t dt;
    GNI_OK(GNI_GetDeviceType(&dt));
    CHECK(dt == GNI_DEVICE_ARIES || dt == GNI_DEVICE_GEMINI);
    uint8_t pt = 0;
    GNI_OK(GNI_GetPtag(0, cookie, &pt));
    CHECK_EQ(pt, ptag);
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_GetPtag(0, cookie ^ 0x10000, &pt));

    /* Modes. */
    gni_cdm_handle_t cdm, bad;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmCreate(rank, ptag, cookie, GNI_CDM_MODE_FORK_NOCOPY | GNI_CDM_MODE_FORK_FULLCOPY, &bad));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmCreate(rank, ptag, cookie, GNI_CDM_MODE_ERR_NO_KILL | GNI_CDM_MODE_ERR_ALL_KILL, &bad));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmCreate(rank, ptag, cookie, GNI_CDM_MODE_FORK_PARTCOPY | GNI_CDM_MODE_FORK_NOCOPY, &bad));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmCreate(rank, ptag, cookie, 0, NULL));
    GNI_OK(GNI_CdmCreate(rank, ptag, cookie, GNI_CDM_MODE_FORK_FULLCOPY | GNI_CDM_MODE_ERR_NO_KILL | GNI_CDM_MODE_DUAL_EVENTS | GNI_CDM_MODE_CACHED_AMO_ENABLED | GNI_CDM_MODE_FAST_DATAGRAM_POLL, &cdm));

    /* Attach: bad device, twice, outputs. */
    gni_nic_handle_t nic, nic2;
    uint32_t la = 0;
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_CdmAttach(cdm, 3, &la, &nic));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmAttach(cdm, 0, NULL, &nic));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmAttach(cdm, 0, &la, NULL));
    GNI_OK(GNI_CdmAttach(cdm, 0, &la, &nic));
    CHECK_EQ(la, envaddr);
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CdmAttach(cdm, 0, &la, &nic2));
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CdmAttach(cdm, (uint32_t)-1, &la, &nic2));

    /* A second CDM with the same inst_id in the same domain on this machine. */
    gni_cdm_handle_t dup;
    GNI_OK(GNI_CdmCreate(rank, ptag, cookie, 0, &dup));
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_CdmAttach(dup, 0, &la, &nic2));
    GNI_OK(GNI_CdmDestroy(dup));
    /* Another inst_id in the same domain attaches fine (device -1 = nearest). */
    GNI_OK(GNI_CdmCreate(1000 + rank, ptag, cookie, 0, &dup));
    GNI_OK(GNI_CdmAttach(dup, (uint32_t)-1, &la, &nic2));
    GNI_OK(GNI_CdmDestroy(dup));
    gni_cq_handle_t cq;
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(nic2, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmDestroy(dup));

    /* Job container: a foreign domain is refused until ConfigureJob adds it. */
    uint8_t optag = (uint8_t)(ptag + 1);
    uint32_t ocookie = cookie + 0x10000;
    gni_cdm_handle_t other;
    GNI_OK(GNI_CdmCreate(rank, optag, ocookie, 0, &other));
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_CdmAttach(other, 0, &la, &nic2));
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_ConfigureJob(0, 7, ptag, cookie + 1, NULL)); /* job ptag, other cookie */
    GNI_EXPECT(GNI_RC_NO_MATCH, GNI_ConfigureJob(2, 7, optag, ocookie, NULL));
    GNI_OK(GNI_ConfigureJob(0, 7, optag, ocookie, NULL));
    GNI_OK(GNI_ConfigureJob(0, 7, optag, ocookie, NULL)); /* same triplet again: no effect */
    GNI_EXPECT(GNI_RC_INVALID_STATE, GNI_ConfigureJob(0, 8, optag, ocookie, NULL)); /* same ptag, other job */
    GNI_OK(GNI_CdmAttach(other, 0, &la, &nic2));
    GNI_OK(GNI_CdmDestroy(other));
    gni_ntt_descriptor_t ntt;
    memset(&ntt, 0, sizeof ntt);
    uint32_t base = 0;
    GNI_EXPECT(GNI_RC_PERMISSION_ERROR, GNI_ConfigureNTT(0, &ntt, &base));
    GNI_EXPECT(GNI_RC_ILLEGAL_OP, GNI_CdmCheckpoint(cdm));

    /* Destroy: the NIC handle is dead afterwards; a second destroy is INVALID_PARAM. */
    GNI_OK(GNI_CdmDestroy(cdm));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmDestroy(cdm));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CqCreate(nic, 16, 0, GNI_CQ_NOBLOCK, NULL, NULL, &cq));
    GNI_EXPECT(GNI_RC_INVALID_PARAM, GNI_CdmAttach(cdm, 0, &la, &nic));
    /* ... and the inst_id can attach again. */
    GNI_OK(GNI_CdmCreate(rank, ptag, cookie, 0, &cdm));
    GNI_OK(GNI_CdmAttach(cdm, 0, &la, &nic));
    GNI_OK(GNI_CdmDestroy(cdm));
    CHECK(PMI_Barrier() == PMI_SUCCESS);
    printf("core_cdm: rank %d ok\n", rank);
    CHECK(PMI_Finalize() == PMI_SUCCESS);
    return 0;
}
