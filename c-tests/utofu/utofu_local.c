/* uTofu within one process: resources, ids, registration, every operation kind and its
 * notices, errors through TCQ and MRQ, TOQ accounting and prepared descriptors, on VCQs
 * of this process (a VCQ may target itself or another VCQ of the same process). */
#include "utest.h"
#include <stdlib.h>
#include <string.h>

static uint64_t big[4096] __attribute__((aligned(256)));
static uint64_t ro_words[64] __attribute__((aligned(256)));

int main(void)
{
    sntest_rank = 0;
    /* TNIs, caps, versions, coordinates. */
    utofu_tni_id_t *tnis; size_t ntni;
    UCHECK(utofu_get_onesided_tnis(&tnis, &ntni));
    CHECK_EQ(ntni, 6);
    for (size_t i = 0; i < ntni; i++) CHECK_EQ(tnis[i], i);
    free(tnis); /* libc malloc */
    UCHECK(utofu_get_barrier_tnis(&tnis, &ntni));
    CHECK_EQ(ntni, 6);
    free(tnis);
    struct utofu_onesided_caps *c;
    UCHECK(utofu_query_onesided_caps(0, &c));
    CHECK_EQ(c->max_edata_size, 1); CHECK_EQ(c->max_toq_desc_size, 64); CHECK_EQ(c->max_putget_size, 16777215);
    CHECK_EQ(c->max_piggyback_size, 32); CHECK_EQ(c->num_cmp_ids, 8); CHECK_EQ(c->num_reserved_stags, 256);
    CHECK_EQ(c->cache_line_size, 256); CHECK_EQ(c->stag_address_alignment, 256); CHECK_EQ(c->max_mtu, 1920); CHECK_EQ(c->max_gap, 255);
    CHECK(c->flags & UTOFU_ONESIDED_CAP_FLAG_ARMW); CHECK(!(c->flags & UTOFU_ONESIDED_CAP_FLAG_SESSION_MODE));
    CHECK_EQ(c->armw_ops, 0x3f);
    struct utofu_onesided_caps *c2;
    UCHECK(utofu_query_onesided_caps(5, &c2));
    CHECK(c2->max_putget_size == c->max_putget_size);
    struct utofu_barrier_caps *bc;
    UCHECK(utofu_query_barrier_caps(0, &bc));
    CHECK_EQ(bc->reduce_ops, 0x1fe); CHECK_EQ(bc->max_uint64_reduction, 6); CHECK_EQ(bc->max_double_reduction, 3);
    int ma, mi;
    utofu_query_tofu_version(&ma, &mi); CHECK_EQ(ma, 3); CHECK_EQ(mi, 0);
    utofu_query_utofu_version(&ma, &mi); CHECK_EQ(ma, UTOFU_VERSION_MAJOR); CHECK_EQ(mi, UTOFU_VERSION_MINOR);
    uint8_t me[6];
    UCHECK(utofu_query_my_coords(me));

    /* VCQs: automatic and chosen components; construct == query; info decodes offline. */
    utofu_vcq_hdl_t a, b, x;
    UCHECK(utofu_create_vcq(1, 0, &a));
    UCHECK(utofu_create_vcq_with_cmp_id(1, 5, UTOFU_VCQ_FLAG_THREAD_SAFE, &b));
    CHECK_EQ(utofu_create_vcq_with_cmp_id(1, 5, 0, &x), UTOFU_ERR_USED);
    CHECK_EQ(utofu_create_vcq_with_cmp_id(1, 8, 0, &x), UTOFU_ERR_INVALID_CMP_ID);
    CHECK_EQ(utofu_create_vcq_with_cmp_id(1, 1, UTOFU_VCQ_FLAG_EXCLUSIVE, &x), UTOFU_ERR_INVALID_FLAGS);
    CHECK_EQ(utofu_create_vcq_with_cmp_id(1, 1, UTOFU_VCQ_FLAG_SESSION_MODE, &x), UTOFU_ERR_INVALID_FLAGS);
    CHECK_EQ(utofu_create_vcq(1, UTOFU_VCQ_FLAG_EXCLUSIVE | UTOFU_VCQ_FLAG_SESSION_MODE, &x), UTOFU_ERR_INVALID_FLAGS);
    CHECK_EQ(utofu_create_vcq(1, UTOFU_VCQ_FLAG_SESSION_MODE, &x), UTOFU_ERR_NOT_SUPPORTED);
    CHECK_EQ(utofu_create_vcq(1, 1UL << 9, &x), UTOFU_ERR_INVALID_FLAGS);
    CHECK_EQ(utofu_create_vcq(6, 0, &x), UTOFU_ERR_INVALID_TNI_ID);
    utofu_vcq_id_t ida, idb, cid, idx;
    UCHECK(utofu_query_vcq_id(a, &ida));
    UCHECK(utofu_query_vcq_id(b, &idb));
    uint8_t co[6]; utofu_tni_id_t t; utofu_cq_id_t q; uint16_t extra;
    UCHECK(utofu_query_vcq_info(idb, co, &t, &q, &extra));
    CHECK(memcmp(co, me, 6) == 0); CHECK_EQ(t, 1);
    CHECK_EQ(q, 0);                                  /* one process per node: CQ 0 (utofu.h's table) */
    /* Fujitsu's layout: CQ in bits 0-5, component 5 + bit 27, the node's own A,B,C as path
     * in bits 28-31, X/Y/Z/A/B/C in bits 32-59, TNI in bits 61-63. */
    uint64_t abc = (uint64_t)me[3] | (uint64_t)me[4] << 1 | (uint64_t)me[5] << 3;
    uint64_t built = (uint64_t)me[0] << 32 | (uint64_t)me[1] << 40 | (uint64_t)me[2] << 48 | abc << 56 | 1ULL << 61 | abc << 28 | (8ULL | 5) << 24 | q;
    CHECK(idb == built);
    CHECK_EQ(extra, 5);
    UCHECK(utofu_query_vcq_info(idb, co, &t, &q, NULL));          /* extra_val optional */
    UCHECK(utofu_construct_vcq_id(me, 1, q, 5, &cid));
    CHECK(cid == idb);
    /* An exclusive VCQ has a CQ of its own. */
    utofu_vcq_hdl_t ex; utofu_vcq_id_t idex; utofu_cq_id_t qex;
    UCHECK(utofu_create_vcq(1, UTOFU_VCQ_FLAG_EXCLUSIVE, &ex));
    UCHECK(utofu_query_vcq_id(ex, &idex));
    UCHECK(utofu_query_vcq_info(idex, co, &t, &qex, NULL));
    CHECK(qex != q);
    /* Components run out at 8 per CQ. */
    utofu_vcq_hdl_t more[8]; int made = 0, rc;
    while ((rc = utofu_create_vcq(1, 0, &more[made])) == UTOFU_SUCCESS) made++;
    CHECK_EQ(rc, UTOFU_ERR_FULL); CHECK_EQ(made, 6);               /* a and b hold two */
    for (int i = 0; i < made; i++) UCHECK(utofu_free_vcq(more[i]));

    /* CQs run out at 12 per TNI and node (ids 0-11): exclusive VCQs take one each, the
     * process's first CQ (the shared one peers compute) last. */
    utofu_vcq_hdl_t exs[12]; int nex = 0;
    while ((rc = utofu_create_vcq(2, UTOFU_VCQ_FLAG_EXCLUSIVE, &exs[nex])) == UTOFU_SUCCESS) {
        utofu_vcq_id_t ide; UCHECK(utofu_query_vcq_id(exs[nex], &ide));
        CHECK_EQ(ide & 0x3f, nex < 11 ? nex + 1 : 0);
        nex++; CHECK(nex <= 12);
    }
    CHECK_EQ(rc, UTOFU_ERR_NOT_AVAILABLE); CHECK_EQ(nex, 12);
    CHECK_EQ(utofu_create_vcq(2, 0, &x), UTOFU_ERR_FULL);
    for (int i = 0; i < nex; i++) UCHECK(utofu_free_vcq(exs[i]));
    UCHECK(utofu_create_vcq(2, 0, &x));                                  /* released again */
    UCHECK(utofu_free_vcq(x));

    /* Paths: set_vcq_id_path changes only the variable; NULL restores the identity. */
    uint8_t p[3] = { (uint8_t)(1 - me[3]), (uint8_t)((me[4] + 1) % 3), me[5] }, pc[3];
    idx = ida;
    UCHECK(utofu_set_vcq_id_path(&idx, p));
    CHECK(idx != ida);
    UCHECK(utofu_query_vcq_id(a, &cid)); CHECK(cid == ida);
    UCHECK(utofu_set_vcq_id_path(&idx, NULL)); CHECK(idx == ida);
    uint8_t badp[3] = { 2, 0, 0 };
    CHECK_EQ(utofu_set_vcq_id_path(&idx, badp), UTOFU_ERR_INVALID_PATH);
    utofu_path_id_t pid;
    UCHECK(utofu_get_path_id(ida, p, &pid));
    CHECK(pid != 0);
    UCHECK(utofu_get_path_coords(ida, pid, pc));
    CHECK(memcmp(p, pc, 3) == 0);
    CHECK_EQ(utofu_get_path_coords(ida, 0, pc), UTOFU_ERR_INVALID_PATH_ID);

    /* Registration: same range twice -> same STADD, counted; STags predictable. */
    utofu_stadd_t s1, s1b, st7, q7, sro;
    UCHECK(utofu_reg_mem(a, big, sizeof big, 0, &s1));
    UCHECK(utofu_reg_mem(a, big, sizeof big, 0, &s1b));
    CHECK(s1 == s1b);
    UCHECK(utofu_reg_mem_with_stag(b, big, 4096, 7, 0, &st7));
    UCHECK(utofu_query_stadd(idb, 7, &q7));
    CHECK(q7 == st7);
    /* A STag's STADD is the STag's alone, Fujitsu's value, on every VCQ. */
    CHECK(st7 == 0xf070000000000ULL);
    UCHECK(utofu_query_stadd(ida, 13, &q7)); CHECK(q7 == 0xf0d0000000000ULL);
    UCHECK(utofu_query_stadd(ida, 7, &q7)); CHECK(q7 == st7);
    utofu_stadd_t sta7;
    UCHECK(utofu_reg_mem_with_stag(a, &big[2048], 4096, 7, 0, &sta7)); CHECK(sta7 == st7);
    CHECK(s1 != st7 && (s1 >> 48) != 0xf);                             /* the two forms differ */
    utofu_stadd_t q7b;
    idx = idb; UCHECK(utofu_set_vcq_id_path(&idx, p));
    UCHECK(utofu_query_stadd(idx, 7, &q7b)); CHECK(q7b == st7);    /* paths do not matter */
    CHECK_EQ(utofu_reg_mem_with_stag(b, big, 4096, 7, 0, &q7b), UTOFU_ERR_USED);
    CHECK_EQ(utofu_reg_mem_with_stag(b, (char *)big + 8, 4096, 8, 0, &q7b), UTOFU_ERR_INVALID_ADDRESS);
    CHECK_EQ(utofu_reg_mem_with_stag(b, big, 100, 8, 0, &q7b), UTOFU_ERR_INVALID_SIZE);
    CHECK_EQ(utofu_reg_mem_with_stag(b, big, 4096, 256, 0, &q7b), UTOFU_ERR_INVALID_STAG);
    UCHECK(utofu_reg_mem(b, ro_words, sizeof ro_words, UTOFU_REG_MEM_FLAG_READ_ONLY, &sro));
    utofu_stadd_t sb;
    UCHECK(utofu_reg_mem(b, big, sizeof big, 0, &sb));

    /* Put a -> b with every notice; data and notice fields. */
    for (int i = 0; i < 4096; i++) big[i] = 0;
    big[0] = 0x1122334455667788ULL;
    UCHECK(utofu_put(a, idb, s1, sb + 8 * 100, 8, 200, ALL_NOTICES, (void *)0x55));
    CHECK(big[100] == 0x1122334455667788ULL);
    void *cb; struct utofu_mrq_notice n;
    UCHECK(wait_tcq(a, &cb)); CHECK(cb == (void *)0x55);
    UCHECK(wait_mrq(a, &n));
    CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_PUT); CHECK_EQ(n.edata, 200); CHECK(n.vcq_id == idb);
    CHECK(n.rmt_stadd == sb + 8 * 101);
    UCHECK(wait_mrq(b, &n));
    CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_RMT_PUT); CHECK_EQ(n.edata, 200); CHECK(n.vcq_id == ida);
    CHECK(n.rmt_stadd == sb + 8 * 101);
    expect_empty(a); expect_empty(b);

    /* A path in the id or in the flags changes nothing but is validated. */
    idx = idb; UCHECK(utofu_set_vcq_id_path(&idx, p));
    UCHECK(utofu_get_path_id(idx, NULL, &pid));
    UCHECK(utofu_put(a, idx, s1, sb, 8, 1, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_PATH(pid), NULL));
    UCHECK(wait_mrq(a, &n)); CHECK(n.vcq_id == idb);                /* the target's own path */
    CHECK_EQ(utofu_put(a, idb, s1, sb, 8, 1, UTOFU_ONESIDED_FLAG_PATH(13), NULL), UTOFU_ERR_INVALID_PATH_ID);
    CHECK_EQ(utofu_put(a, idb, s1, sb, 8, 256, 0, NULL), UTOFU_ERR_INVALID_EDATA);
    CHECK_EQ(utofu_put(a, idb, s1, sb, 16777216, 0, 0, NULL), UTOFU_ERR_INVALID_SIZE);
    CHECK_EQ(utofu_put(a, idb, s1, sb, 8, 0, 1UL << 4, NULL), UTOFU_ERR_INVALID_FLAGS);
    expect_empty(a);

    /* Get b -> a: notices carry both STADDs one past the end. */
    big[200] = 42;
    utofu_stadd_t s1_300 = s1 + 8 * 300;
    UCHECK(utofu_get(a, idb, s1_300, sb + 8 * 200, 8, 9, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    CHECK(big[300] == 42);
    UCHECK(wait_mrq(a, &n));
    CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_GET); CHECK(n.lcl_stadd == s1_300 + 8); CHECK(n.rmt_stadd == sb + 8 * 201);
    UCHECK(wait_mrq(b, &n));
    CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_RMT_GET); CHECK(n.lcl_stadd == s1_300 + 8); CHECK(n.vcq_id == ida);

    /* ARMW: every op, 4 and 8 bytes; rmt_value is the old value, zero-extended. */
    big[400] = 22;
    UCHECK(utofu_armw8(a, idb, UTOFU_ARMW_OP_ADD, 11, sb + 8 * 400, 3, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE | UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    CHECK(big[400] == 33);
    UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_ARMW); CHECK_EQ(n.rmt_value, 22); CHECK(n.rmt_stadd == sb + 8 * 400);
    UCHECK(wait_mrq(b, &n)); CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_RMT_ARMW); CHECK(n.rmt_stadd == sb + 8 * 400);
    struct { int op; uint64_t v, before, after; } ops8[] = {
        { UTOFU_ARMW_OP_SWAP, 5, 33, 5 }, { UTOFU_ARMW_OP_XOR, 3, 5, 6 }, { UTOFU_ARMW_OP_AND, 4, 6, 4 }, { UTOFU_ARMW_OP_OR, 9, 4, 13 },
        { UTOFU_ARMW_OP_ADD, ~0ULL, 13, 12 } };
    for (unsigned i = 0; i < sizeof ops8 / sizeof ops8[0]; i++) {
        UCHECK(utofu_armw8(a, idb, ops8[i].op, ops8[i].v, sb + 8 * 400, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
        UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.rmt_value, ops8[i].before); CHECK(big[400] == ops8[i].after);
    }
    UCHECK(utofu_cswap8(a, idb, 99, 7, sb + 8 * 400, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));  /* no match */
    UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.rmt_value, 12); CHECK(big[400] == 12);
    UCHECK(utofu_cswap8(a, idb, 12, 7, sb + 8 * 400, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.rmt_value, 12); CHECK(big[400] == 7);
    uint32_t *w32 = (uint32_t *)(void *)&big[500];
    w32[0] = 0xfffffff0u; w32[1] = 0xabcdef01u;
    UCHECK(utofu_armw4(a, idb, UTOFU_ARMW_OP_ADD, 0x20, sb + 8 * 500, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    UCHECK(wait_mrq(a, &n)); CHECK(n.rmt_value == 0xfffffff0ULL); CHECK(w32[0] == 0x10); CHECK(w32[1] == 0xabcdef01u);
    UCHECK(utofu_cswap4(a, idb, 0xabcdef01u, 1, sb + 8 * 500 + 4, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    UCHECK(wait_mrq(a, &n)); CHECK(n.rmt_value == 0xabcdef01ULL); CHECK(w32[1] == 1);
    CHECK_EQ(utofu_armw8(a, idb, 0, 1, sb, 0, 0, NULL), UTOFU_ERR_INVALID_OP);
    CHECK_EQ(utofu_armw8(a, idb, 6, 1, sb, 0, 0, NULL), UTOFU_ERR_INVALID_OP);
    /* Misaligned ARMW: an MRQ error at the initiator, memory untouched. */
    big[600] = 1;
    UCHECK(utofu_armw8(a, idb, UTOFU_ARMW_OP_ADD, 1, sb + 8 * 600 + 4, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_STADD); CHECK(big[600] == 1);
    while (utofu_poll_tcq(a, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;

    /* Piggyback: data copied at the call; piggyback8 sends the low-order bytes. */
    uint8_t pbsrc[32];
    for (int i = 0; i < 32; i++) pbsrc[i] = (uint8_t)(i + 1);
    UCHECK(utofu_put_piggyback(a, idb, pbsrc, sb + 8 * 700, 32, 0, UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    memset(pbsrc, 0, sizeof pbsrc);
    CHECK(((uint8_t *)&big[700])[0] == 1 && ((uint8_t *)&big[700])[31] == 32);
    UCHECK(wait_mrq(b, &n)); CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_RMT_PUT); CHECK(n.rmt_stadd == sb + 8 * 700 + 32);
    big[710] = 0;
    UCHECK(utofu_put_piggyback8(a, idb, 0x0807060504030201ULL, sb + 8 * 710, 3, 0, 0, NULL));
    CHECK(big[710] == 0x030201ULL);
    CHECK_EQ(utofu_put_piggyback(a, idb, pbsrc, sb, 33, 0, 0, NULL), UTOFU_ERR_INVALID_SIZE);
    CHECK_EQ(utofu_put_piggyback8(a, idb, 1, sb, 9, 0, 0, NULL), UTOFU_ERR_INVALID_SIZE);

    /* Zero-length put: allowed, notices as usual. */
    UCHECK(utofu_put(a, idb, s1, sb, 0, 4, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL));
    UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.edata, 4);

    /* Stride: num_blocks blocks, a notice per block per kind; same stride both sides. */
    for (int i = 0; i < 10; i++) big[i * 10] = 1000 + i;
    UCHECK(utofu_put_stride(a, idb, s1, sb + 8 * 1000, 8, 80, 10, 5, ALL_NOTICES, (void *)7));
    for (int i = 0; i < 10; i++) CHECK(big[1000 + i * 10] == 1000ULL + i);
    for (int i = 0; i < 10; i++) {
        UCHECK(wait_tcq(a, &cb)); CHECK(cb == (void *)7);
        UCHECK(wait_mrq(a, &n)); CHECK(n.rmt_stadd == sb + 8 * 1000 + 80 * i + 8);
        UCHECK(wait_mrq(b, &n)); CHECK_EQ(n.edata, 5);
    }
    expect_empty(a); expect_empty(b);
    UCHECK(utofu_get_stride(a, idb, s1 + 8 * 2000, sb + 8 * 1000, 8, 80, 10, 0, UTOFU_ONESIDED_FLAG_TCQ_NOTICE, NULL));
    for (int i = 0; i < 10; i++) { CHECK(big[2000 + i * 10] == 1000ULL + i); UCHECK(wait_tcq(a, &cb)); }
    CHECK_EQ(utofu_put_stride(a, idb, s1, sb, 8, 80, 0, 0, 0, NULL), UTOFU_ERR_INVALID_NUMBER);
    CHECK_EQ(utofu_put_gap(a, idb, s1, sb, 8, 0, 0, 1921, 0, NULL), UTOFU_ERR_INVALID_SIZE);
    CHECK_EQ(utofu_put_gap(a, idb, s1, sb, 8, 0, 0, 1920, 256, NULL), UTOFU_ERR_INVALID_SIZE);
    UCHECK(utofu_put_gap(a, idb, s1, sb, 8, 0, 0, 1920, 255, NULL));
    UCHECK(utofu_get_stride_gap(a, idb, s1 + 8 * 2000, sb + 8 * 1000, 8, 80, 2, 0, 0, 512, 8, NULL));

    /* NOP: TCQ only with TCQ_NOTICE, never an MRQ notice. */
    UCHECK(utofu_nop(a, UTOFU_ONESIDED_FLAG_TCQ_NOTICE | UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, (void *)9));
    UCHECK(wait_tcq(a, &cb)); CHECK(cb == (void *)9);
    expect_empty(a);

    /* READ_ONLY: put/ARMW into it fail at the initiator's MRQ, get into it too. */
    ro_words[0] = 5;
    UCHECK(utofu_put(a, idb, s1, sro, 8, 0, UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY); CHECK(ro_words[0] == 5);
    CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_LCL_PUT);
    UCHECK(utofu_armw8(a, idb, UTOFU_ARMW_OP_ADD, 1, sro, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY); CHECK(ro_words[0] == 5);
    UCHECK(utofu_get(b, idb, sro, sb, 8, 0, 0, NULL));                 /* get INTO read-only */
    CHECK_EQ(wait_mrq(b, &n), UTOFU_ERR_MRQ_LCL_MEMORY); CHECK(ro_words[0] == 5);
    UCHECK(utofu_get(a, idb, s1, sro, 8, 0, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, NULL)); /* FROM it: fine */
    UCHECK(wait_mrq(a, &n)); CHECK(big[0] == 5);
    expect_empty(b);

    /* Range errors: local (TCQ) and remote (MRQ), nothing touched. */
    big[3] = 77;
    UCHECK(utofu_put(a, idb, s1 + sizeof big, sb, 8, 0, 0, (void *)1));
    CHECK_EQ(wait_tcq(a, &cb), UTOFU_ERR_TCQ_STADD); CHECK(cb == (void *)1);
    UCHECK(utofu_put(a, idb, s1 + sizeof big - 4, sb, 8, 0, 0, NULL));
    CHECK_EQ(wait_tcq(a, &cb), UTOFU_ERR_TCQ_LENGTH);
    UCHECK(utofu_put(a, idb, s1 + (1ULL << 40), sb, 8, 0, 0, NULL));
    CHECK_EQ(wait_tcq(a, &cb), UTOFU_ERR_TCQ_MEMORY);
    UCHECK(utofu_put(a, idb, s1, sb + sizeof big, 8, 0, UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_STADD);
    UCHECK(utofu_put(a, idb, s1, sb + sizeof big - 8, 16, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_LENGTH);
    UCHECK(utofu_put(a, idb, s1, s1, 8, 0, 0, NULL));                    /* a's STADD used on b */
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY);
    /* A STag's STADD reaches whatever that VCQ registered under the STag: a's own STADD
     * of STag 7 is b's; STag 9 nobody registered. */
    big[2048] = 0x57a9;
    UCHECK(utofu_put(a, idb, sta7, st7 + 8, 8, 0, 0, NULL));
    CHECK(big[1] == 0x57a9);
    UCHECK(utofu_put(a, idb, sta7, st7 + 2 * 4096, 8, 0, 0, NULL));      /* past STag 7's region */
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_STADD);
    UCHECK(utofu_query_stadd(idb, 9, &q7));
    UCHECK(utofu_put(a, idb, sta7, q7, 8, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY);
    UCHECK(utofu_put(a, idb, sta7, 0x123456789abcULL, 8, 0, 0, NULL));   /* no STADD form at all */
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY);
    UCHECK(utofu_dereg_mem(a, sta7, 0));
    UCHECK(utofu_get(a, idb, s1 + sizeof big, sb, 8, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_LCL_STADD);
    CHECK(big[3] == 77);
    expect_empty(b);
    while (utofu_poll_tcq(a, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;

    /* A VCQ id nobody created: MRQ_PEER. */
    UCHECK(utofu_construct_vcq_id(me, 4, 8, 7, &cid));
    UCHECK(utofu_put(a, cid, s1, sb, 8, 0, 0, NULL));
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_PEER); CHECK(n.vcq_id == cid);
    /* An id built from coordinates, TNI and CQ alone (no component, path bits 0) names
     * the CQ's VCQ: b's CQ holds a (component 0) and b (5): a. */
    uint64_t bare = idb & ~0xff000000ULL;
    big[5] = 0; big[6] = 0xba4e;
    UCHECK(utofu_put(b, bare, sb + 8 * 6, s1 + 8 * 5, 8, 0, UTOFU_ONESIDED_FLAG_REMOTE_MRQ_NOTICE, NULL));
    UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.notice_type, UTOFU_MRQ_TYPE_RMT_PUT); CHECK(n.vcq_id == idb);
    CHECK(big[5] == 0xba4e);
    UCHECK(utofu_query_vcq_info(bare, co, &t, &q, &extra)); CHECK_EQ(t, 1); CHECK_EQ(extra, 0);
    /* Malformed ids: reserved bits, CQ 12, TNI 6. */
    CHECK_EQ(utofu_put(a, idb | 1ULL << 10, s1, sb, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_put(a, idb | 1ULL << 60, s1, sb, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_put(a, (idb & ~0x3fULL) | 12, s1, sb, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_query_vcq_info((idb & ~(7ULL << 61)) | 6ULL << 61, co, &t, &q, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    /* The quick paths remember the last remote id found well-formed: malformed ids between
     * uses of it are still refused (puts and ARMWs), it still works after them, and a bad
     * handle is reported before bad arguments. */
    UCHECK(utofu_armw8(a, idb, UTOFU_ARMW_OP_ADD, 0, sb + 8 * 400, 0, 0, NULL));
    CHECK_EQ(utofu_armw8(a, idb | 1ULL << 10, UTOFU_ARMW_OP_ADD, 0, sb + 8 * 400, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    CHECK_EQ(utofu_cswap4(a, idb | 1ULL << 60, 0, 0, sb + 8 * 500, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));
    CHECK_EQ(utofu_put(a, (idb & ~0x3fULL) | 12, s1, sb, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_ID);
    UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));
    CHECK_EQ(utofu_put(a ^ 1ULL << 40, idb | 1ULL << 10, s1, sb, 8, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_HDL);
    CHECK_EQ(utofu_armw8(a ^ 1ULL << 40, idb, 0, 1, sb, 0, 0, NULL), UTOFU_ERR_INVALID_VCQ_HDL);
    while (utofu_poll_tcq(a, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
    while (utofu_poll_tcq(b, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;

    /* TOQ accounting: 1024 slots held until poll_tcq consumes them, even silently. */
    int posted = 0;
    while ((rc = utofu_put(a, idb, s1, sb, 8, 0, 0, NULL)) == UTOFU_SUCCESS) posted++;
    CHECK_EQ(rc, UTOFU_ERR_BUSY); CHECK_EQ(posted, 1024);
    size_t unread;
    UCHECK(utofu_query_num_unread_tcq(a, &unread)); CHECK(unread >= 1024);
    CHECK_EQ(utofu_poll_tcq(a, 0, &cb), UTOFU_ERR_NOT_FOUND);           /* consumed silently */
    UCHECK(utofu_query_num_unread_tcq(a, &unread)); CHECK_EQ(unread, 0);

    /* Prepared descriptors: concatenated, mixed kinds, reusable, all-or-nothing. */
    uint64_t desc[8 * 16];
    size_t sz, total = 0;
    UCHECK(utofu_prepare_put_stride(a, idb, s1, sb + 8 * 3000, 8, 16, 3, 1, 0, desc, &sz)); total += sz;
    CHECK(sz <= 3 * 64 && sz % 8 == 0);
    UCHECK(utofu_prepare_armw8(a, idb, UTOFU_ARMW_OP_ADD, 1, sb + 8 * 3100, 2, UTOFU_ONESIDED_FLAG_LOCAL_MRQ_NOTICE, (char *)desc + total, &sz)); total += sz;
    UCHECK(utofu_prepare_put_piggyback8(a, idb, 0xbeef, sb + 8 * 3200, 8, 3, 0, (char *)desc + total, &sz)); total += sz;
    UCHECK(utofu_prepare_nop(a, UTOFU_ONESIDED_FLAG_TCQ_NOTICE, (char *)desc + total, &sz)); total += sz;
    UCHECK(utofu_prepare_cswap4(a, idb, 0, 1, sb + 8 * 3300, 0, 0, (char *)desc + total, &sz)); total += sz;
    UCHECK(utofu_prepare_get(a, idb, s1 + 8 * 3400, sb + 8 * 3200, 8, 0, 0, (char *)desc + total, &sz)); total += sz;
    big[3100] = 0; big[3300] = 0;
    for (int round = 1; round <= 3; round++) {
        UCHECK(utofu_post_toq(a, desc, total, (void *)(intptr_t)round));
        CHECK(big[3100] == (uint64_t)round); CHECK(big[3200] == 0xbeef); CHECK(big[3400] == 0xbeef);
        UCHECK(wait_tcq(a, &cb)); CHECK(cb == (void *)(intptr_t)round);   /* the NOP's */
        UCHECK(wait_mrq(a, &n)); CHECK_EQ(n.rmt_value, (uint64_t)round - 1);
        expect_empty(a);
    }
    uint32_t w3300; memcpy(&w3300, &big[3300], 4); CHECK(w3300 == 1);
    UCHECK(utofu_post_toq(a, NULL, 0, NULL));                           /* only "start delayed" */
    /* Position independent: a copy elsewhere posts the same way. */
    uint64_t moved[8 * 16 + 1];
    memcpy(moved + 1, desc, total);
    big[3100] = 0;
    UCHECK(utofu_post_toq(a, moved + 1, total, NULL));
    CHECK(big[3100] == 1);
    UCHECK(wait_tcq(a, &cb)); UCHECK(wait_mrq(a, &n)); expect_empty(a);
    CHECK_EQ(utofu_post_toq(b, desc, total, NULL), UTOFU_ERR_INVALID_DESC); /* prepared for a */
    CHECK_EQ(utofu_post_toq(a, desc, total - 8, NULL), UTOFU_ERR_INVALID_DESC);
    uint64_t junk[8] = { 0x1234, 0, 0, 0, 0, 0, 0, 0 };
    CHECK_EQ(utofu_post_toq(a, junk, sizeof junk, NULL), UTOFU_ERR_INVALID_DESC);
    /* all-or-nothing: with 1020 slots taken, 9 prepared ops do not fit and none runs. */
    for (int i = 0; i < 1020; i++) UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));
    big[3100] = 0;
    CHECK_EQ(utofu_post_toq(a, desc, total, NULL), UTOFU_ERR_BUSY);
    CHECK(big[3100] == 0);
    while (utofu_poll_tcq(a, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;

    /* Deregistration: counted; STADDs of deregistered rows stop resolving. */
    UCHECK(utofu_dereg_mem(a, s1, 0));
    UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));                   /* one reference left */
    CHECK_EQ(utofu_poll_tcq(a, 0, &cb), UTOFU_ERR_NOT_FOUND);
    UCHECK(utofu_dereg_mem(a, s1, 0));
    CHECK_EQ(utofu_dereg_mem(a, s1, 0), UTOFU_ERR_INVALID_STADD);
    UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));
    CHECK_EQ(wait_tcq(a, &cb), UTOFU_ERR_TCQ_MEMORY);
    while (utofu_poll_tcq(a, 0, &cb) != UTOFU_ERR_NOT_FOUND) ;
    UCHECK(utofu_reg_mem(a, big, sizeof big, 0, &s1));
    utofu_stadd_t again;
    UCHECK(utofu_reg_mem(b, &big[8], 64, 0, &again));                  /* a new row for b */
    UCHECK(utofu_dereg_mem(b, sb, 0));
    UCHECK(utofu_put(a, idb, s1, sb, 8, 0, 0, NULL));                   /* stale remote STADD */
    UCHECK(utofu_dereg_mem(b, again, 0));
    UCHECK(utofu_dereg_mem(b, st7, 0));
    UCHECK(utofu_reg_mem_with_stag(b, big, 4096, 7, 0, &q7b));         /* STag reusable */
    CHECK(q7b == st7);
    UCHECK(utofu_dereg_mem(b, st7, 0));
    CHECK_EQ(utofu_dereg_mem(b, sro + 8, 0), UTOFU_ERR_INVALID_STADD);  /* not a region start */
    UCHECK(utofu_dereg_mem(b, sro, 0));

    /* Unread MRQ entries are counted. */
    UCHECK(utofu_query_num_unread_mrq(a, &unread));
    CHECK_EQ(unread, 1);                                                  /* the stale-STADD error */
    CHECK_EQ(wait_mrq(a, &n), UTOFU_ERR_MRQ_RMT_MEMORY);
    UCHECK(utofu_query_num_unread_mrq(a, &unread)); CHECK_EQ(unread, 0);

    /* The last error is printed with its call and code. */
    CHECK_EQ(utofu_free_vcq(0), UTOFU_ERR_INVALID_VCQ_HDL);
    extern void utofu_get_last_error(const char *);
    utofu_get_last_error("utofu_local");

    UCHECK(utofu_free_vcq(ex));
    UCHECK(utofu_free_vcq(b));
    CHECK_EQ(utofu_free_vcq(b), UTOFU_ERR_INVALID_VCQ_HDL);
    UCHECK(utofu_free_vcq(a));
    /* A freed VCQ's component is free again, and its id is no target any more. */
    UCHECK(utofu_create_vcq_with_cmp_id(1, 5, 0, &b));
    UCHECK(utofu_free_vcq(b));
    printf("utofu_local: ok\n");
    return 0;
}
