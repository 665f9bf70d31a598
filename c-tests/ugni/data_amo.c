/* AMO exactness under contention for EVERY gni_fma_cmd_type_t: all ranks hammer one word
 * on rank 0 (a 64-bit word, or a 32-bit word for the Aries _S commands, with guard words
 * around it); after each command the final value must be exact.  Fetching commands are
 * also checked through what they return (CSWAP increments by compare-and-swap retry
 * loops; SWAP by conservation of the swapped values).  Also: the AMO latency.
 * Usage: data_amo [iterations] */
#include "data_util.h"
#include <math.h>

enum kind { ADD, AND, OR, XOR, AX, CSWAP, SWAP, IMIN, IMAX, FPADD, FPMIN, FPMAX };
struct cmd { const char *name; uint32_t cmd; enum kind k; int bytes; int fetch; };

#define C(name, k, bytes, fetch) { #name, name, k, bytes, fetch }
#define A2(op, k) C(GNI_FMA_ATOMIC2_F##op, k, 8, 1), C(GNI_FMA_ATOMIC2_F##op##_C, k, 8, 1), \
    C(GNI_FMA_ATOMIC2_F##op##_S, k, 4, 1), C(GNI_FMA_ATOMIC2_F##op##_SC, k, 4, 1), \
    C(GNI_FMA_ATOMIC2_##op, k, 8, 0), C(GNI_FMA_ATOMIC2_##op##_C, k, 8, 0), \
    C(GNI_FMA_ATOMIC2_##op##_S, k, 4, 0), C(GNI_FMA_ATOMIC2_##op##_SC, k, 4, 0)
static const struct cmd cmds[] = {
    C(GNI_FMA_ATOMIC_FADD, ADD, 8, 1), C(GNI_FMA_ATOMIC_FADD_C, ADD, 8, 1),
    C(GNI_FMA_ATOMIC_FAND, AND, 8, 1), C(GNI_FMA_ATOMIC_FAND_C, AND, 8, 1),
    C(GNI_FMA_ATOMIC_FOR, OR, 8, 1), C(GNI_FMA_ATOMIC_FOR_C, OR, 8, 1),
    C(GNI_FMA_ATOMIC_FXOR, XOR, 8, 1), C(GNI_FMA_ATOMIC_FXOR_C, XOR, 8, 1),
    C(GNI_FMA_ATOMIC_FAX, AX, 8, 1), C(GNI_FMA_ATOMIC_FAX_C, AX, 8, 1),
    C(GNI_FMA_ATOMIC_CSWAP, CSWAP, 8, 1), C(GNI_FMA_ATOMIC_CSWAP_C, CSWAP, 8, 1),
    C(GNI_FMA_ATOMIC_ADD, ADD, 8, 0), C(GNI_FMA_ATOMIC_ADD_C, ADD, 8, 0),
    C(GNI_FMA_ATOMIC_AND, AND, 8, 0), C(GNI_FMA_ATOMIC_AND_C, AND, 8, 0),
    C(GNI_FMA_ATOMIC_OR, OR, 8, 0), C(GNI_FMA_ATOMIC_OR_C, OR, 8, 0),
    C(GNI_FMA_ATOMIC_XOR, XOR, 8, 0), C(GNI_FMA_ATOMIC_XOR_C, XOR, 8, 0),
    C(GNI_FMA_ATOMIC_AX, AX, 8, 0), C(GNI_FMA_ATOMIC_AX_C, AX, 8, 0),
    A2(AND, AND), A2(OR, OR), A2(XOR, XOR), A2(SWAP, SWAP), A2(AX, AX), A2(CSWAP, CSWAP),
    A2(IMIN, IMIN), A2(IMAX, IMAX), A2(IADD, ADD), A2(FPMIN, FPMIN), A2(FPMAX, FPMAX), A2(FPADD, FPADD),
};
#define NCMDS (sizeof(cmds) / sizeof(cmds[0]))

static gnit_t t;
static uint64_t *win, *res;              /* win: registered target (rank 0's used); res: fetch results */
static gni_mem_handle_t wmh, rmh, *mh;
static uint64_t *base;

/* Word address on rank 0: 64-bit commands use win[8], 32-bit ones the low half of win[16]. */
static uint64_t target_addr(const struct cmd *c) { return base[0] + (c->bytes == 8 ? 64 : 128); }

static uint64_t amo(const struct cmd *c, uint64_t op1, uint64_t op2)
{
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_AMO, GNI_CQMODE_GLOBAL_EVENT, res, c->fetch ? rmh : (gni_mem_handle_t){0, 0},
            target_addr(c), mh[0], c->bytes);
    d.amo_cmd = c->cmd;
    d.first_operand = op1;
    d.second_operand = op2;
    *res = 0xdeadbeefdeadbeefull;
    dt_fma(&t, 0, &d);
    return c->bytes == 8 ? *res : (uint64_t)*(uint32_t *)res;
}

/* Reads the target word with an FMA GET (so non-fetching commands can poll). */
static uint64_t peek(const struct cmd *c)
{
    gni_post_descriptor_t d;
    dt_desc(&d, GNI_POST_FMA_GET, GNI_CQMODE_GLOBAL_EVENT, res + 1, rmh, target_addr(c), mh[0], c->bytes);
    dt_fma(&t, 0, &d);
    return c->bytes == 8 ? res[1] : (uint64_t)*(uint32_t *)(res + 1);
}

static uint64_t fbits(const struct cmd *c, double v)
{
    if (c->bytes == 8) { uint64_t b; memcpy(&b, &v, 8); return b; }
    float f = (float)v; uint32_t b; memcpy(&b, &f, 4); return b;
}

int main(int argc, char **argv)
{
    int K = argc > 1 ? atoi(argv[1]) : 40;
    gnit_init(&t, 64);
    int n = t.size, me = t.rank;
    win = dt_alloc(4096);
    res = dt_alloc(4096);
    wmh = dt_reg(&t, win, 4096, NULL, GNI_MEM_READWRITE);
    rmh = dt_reg(&t, res, 4096, NULL, GNI_MEM_READWRITE);
    mh = calloc(n, sizeof(*mh));
    base = calloc(n, sizeof(*base));
    gnit_exchange_mem(&t, win, wmh, mh, base);
    uint64_t all = n >= 64 ? ~0ull : (1ull << n) - 1;   /* one bit per rank */
    uint64_t wmask = 0;

    for (size_t ci = 0; ci < NCMDS; ci++) {
        const struct cmd *c = &cmds[ci];
        uint64_t mask = c->bytes == 8 ? ~0ull : 0xffffffffull;
        uint64_t init = 0, want = 0;
        int bits = c->bytes * 8;
        switch (c->k) {
        case AND: init = mask; want = mask & ~all; break;
        case AX:  init = 0xffff; want = (0xffff & ~all) | ((K & 1) ? all << 16 : 0); break;
        case FPMIN: case FPMAX: init = fbits(c, 0.0); break;
        default: init = 0;
        }
        if (me == 0) {
            for (int i = 0; i < 32; i++) win[i] = 0x5555555555555555ull;
            if (c->bytes == 8) win[8] = init; else *(uint32_t *)&win[16] = (uint32_t)init;
        }
        dt_barrier();
        uint64_t swapsum = 0, swapped = 0;
        for (int i = 0; i < K; i++) {
            uint64_t v, got;
            switch (c->k) {
            case ADD: amo(c, me + 1, 0); break;
            case AND: amo(c, ~(1ull << me), 0); break;
            case OR: amo(c, 1ull << me, 0); break;
            case XOR: amo(c, 1ull << me, 0); break;
            case AX: amo(c, ~(1ull << me), 1ull << (me + 16)); break;
            case IMIN: amo(c, (uint64_t)(int64_t)-(me * 1000 + i), 0); break;
            case IMAX: amo(c, (uint64_t)(int64_t)(me * 1000 + i), 0); break;
            case FPADD: amo(c, fbits(c, 1.0), 0); break;
            case FPMIN: amo(c, fbits(c, -(double)(me * 1000 + i)), 0); break;
            case FPMAX: amo(c, fbits(c, (double)(me * 1000 + i) + 0.5), 0); break;
            case SWAP:
                v = ((uint64_t)(me + 1) << (bits / 2)) + i + 1;
                v &= mask;
                got = amo(c, v, 0);
                swapped += v;
                if (c->fetch) swapsum += got;
                break;
            case CSWAP:
                if (c->fetch) {       /* increment by compare-and-swap retry loop */
                    uint64_t old = 0;
                    for (;;) {
                        got = amo(c, old, (old + 1) & mask);
                        if (got == old) break;
                        old = got;
                    }
                } else {              /* token passing: wait for my turn, then bump */
                    uint64_t turn = (uint64_t)i * n + me;
                    while (peek(c) != turn) {}
                    amo(c, turn, turn + 1);
                }
                break;
            }
        }
        dt_barrier();
        uint64_t final = peek(c);
        switch (c->k) {
        case ADD: want = (uint64_t)K * n * (n + 1) / 2; break;
        case OR: want = all; break;
        case XOR: want = (K & 1) ? all : 0; break;
        case IMIN: want = (uint64_t)(int64_t)-((n - 1) * 1000 + K - 1) & mask; break;
        case IMAX: want = (uint64_t)((n - 1) * 1000 + K - 1); break;
        case FPADD: want = fbits(c, (double)K * n); break;
        case FPMIN: want = fbits(c, -(double)((n - 1) * 1000 + K - 1)); break;
        case FPMAX: want = fbits(c, (double)((n - 1) * 1000 + K - 1) + 0.5); break;
        case CSWAP: want = (uint64_t)K * n; break;
        case SWAP: {
            /* conservation: init + all swapped-in values = final + all fetched values */
            uint64_t mine[2] = { swapped, swapsum }, *sums = calloc(2 * n, 8);
            CHECK(PMI_Allgather(mine, sums, sizeof(mine)) == PMI_SUCCESS);
            uint64_t in = 0, out = 0;
            for (int r = 0; r < n; r++) { in += sums[2 * r]; out += sums[2 * r + 1]; }
            free(sums);
            if (c->fetch) want = (init + in - out) & mask;
            else {
                want = final;   /* the last value of some rank */
                int ok = 0;
                for (int r = 0; r < n; r++) ok |= final == ((((uint64_t)(r + 1) << (bits / 2)) + K) & mask);
                if (!ok) SN_FAIL("%s: final %#llx is not any rank's last value", c->name, (unsigned long long)final);
            }
            break;
        }
        default: break;
        }
        want &= mask;
        if (final != want)
            SN_FAIL("%s: final %#llx, expected %#llx", c->name, (unsigned long long)final, (unsigned long long)want);
        if (me == 0) {
            for (int i = 0; i < 32; i++) {
                if (i == 8 && c->bytes == 8) continue;
                if (i == 16 && c->bytes == 4) {
                    if ((win[16] >> 32) != 0x55555555ull) SN_FAIL("%s: upper half of the 32-bit word's qword changed", c->name);
                    continue;
                }
                if (win[i] != 0x5555555555555555ull) SN_FAIL("%s: guard word %d changed", c->name, i);
            }
        }
        wmask |= 1;
        dt_barrier();
    }
    if (me == 0) printf("data_amo: %zu commands exact with %d ranks x %d ops\n", NCMDS, n, K);

    /* Latency of a fetching 64-bit AMO (rank 1 -> rank 0 when possible). */
    if (me == (n > 1 ? 1 : 0)) {
        const struct cmd *c = &cmds[0];
        int iters = 20000;
        double t0 = dt_now();
        for (int i = 0; i < iters; i++) amo(c, 1, 0);
        printf("data_amo: FADD 8 B + GLOBAL event: %.2f us\n", (dt_now() - t0) / iters * 1e6);
    }
    dt_barrier();
    GNI_OK(GNI_MemDeregister(t.nic, &wmh));
    GNI_OK(GNI_MemDeregister(t.nic, &rmh));
    gnit_fini(&t);
    printf("data_amo: rank %d ok\n", me);
    return 0;
}
