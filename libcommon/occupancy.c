/* occupancy.c: agent capacity and the rebuild of the Redis occupancy layout
 * (see occupancy.h and docs/scheduler.md). */
#include "libcommon/occupancy.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const occ_scope_tags[OCC_SCOPES] = {"kp:", "user:", "project:", "domain:"};

/* ---- scripts ----------------------------------------------------------------------------- */

/* ARGV: prefix, id, schedulable, caps "slot=n ...", devcaps "dev=n ...",
 * drained ("1", "0": the field removed, "": left as it is). */
static const char SET_AGENT_LUA[] =
    "local key = ARGV[1]..'agent:'..ARGV[2]\n"
    "local newf = {}\n"
    "for s, v in string.gmatch(ARGV[4], '(%S+)=(%d+)') do newf['cap:'..s] = v end\n"
    "for d, v in string.gmatch(ARGV[5], '(%d+)=(%d+)') do newf['devcap:'..d] = v end\n"
    "local h = redis.call('HGETALL', key)\n"
    "for x = 1, #h, 2 do\n"
    "  local k = h[x]\n"
    "  if (string.sub(k, 1, 4) == 'cap:' or string.sub(k, 1, 7) == 'devcap:') and not newf[k] "
    "then redis.call('HDEL', key, k) end\n"
    "end\n"
    "for k, v in pairs(newf) do redis.call('HSET', key, k, v) end\n"
    "redis.call('HSET', key, 'schedulable', ARGV[3])\n"
    "if ARGV[6] == '1' then redis.call('HSET', key, 'drained', '1')\n"
    "elseif ARGV[6] == '0' then redis.call('HDEL', key, 'drained') end\n"
    "return 1\n";

/* ARGV: prefix, lock ms. Sets the rebuild lock, deletes the occupancy keys. */
static const char WIPE_LUA[] =
    "local P = ARGV[1]\n"
    "redis.call('SET', P..'rebuild', '1', 'PX', ARGV[2])\n"
    "local n = 0\n"
    "for _, pat in ipairs({'agent:*', 'alloc:*', 'sess:*', 'usage:*'}) do\n"
    "  local keys = redis.call('KEYS', P..pat)\n"
    "  for x = 1, #keys, 1000 do redis.call('DEL', unpack(keys, x, math.min(x + 999, #keys))) end\n"
    "  n = n + #keys\n"
    "end\n"
    "return n\n";

/* ARGV: prefix, nsessions, then per session: session id, nkernels, nusage,
 * (usage id, limit)..., per kernel: kernel, agent, slots, devs (limits are
 * not checked here). Records the sessions
 * as the reserve script does, without capacity checks; a kernel already
 * recorded is left alone. Returns the number of kernels recorded. */
static const char RESTORE_LUA[] =
    "local P, nsess = ARGV[1], tonumber(ARGV[2])\n"
    "local i, n = 3, 0\n"
    "for s = 1, nsess do\n"
    "  local sid, nk, nu = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])\n"
    "  i = i + 3\n"
    "  local usage = {}\n"
    "  for u = 1, nu do usage[u] = ARGV[i]; i = i + 2 end\n"
    "  local added = 0\n"
    "  for k = 1, nk do\n"
    "    local kid, ag, senc, denc = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]\n"
    "    i = i + 4\n"
    "    if redis.call('EXISTS', P..'alloc:'..kid) == 0 then\n"
    "      local akey = P..'agent:'..ag\n"
    "      for sl, v in string.gmatch(senc, '(%S+)=(%d+)') do\n"
    "        redis.call('HINCRBY', akey, 'used:'..sl, v)\n"
    "        for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, sl, v) end\n"
    "      end\n"
    "      for d, v in string.gmatch(denc, '(%d+)=(%d+)') do redis.call('HINCRBY', akey, "
    "'dev:'..d, v) end\n"
    "      redis.call('HSET', P..'alloc:'..kid, 'session', sid, 'agent', ag, 'slots', senc,\n"
    "                 'devs', denc, 'usage', table.concat(usage, ' '))\n"
    "      added = added + 1\n"
    "    end\n"
    "  end\n"
    "  if added > 0 then\n"
    "    if redis.call('INCRBY', P..'sess:'..sid, added) == added then\n"
    "      for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, 'sessions', 1) end\n"
    "    end\n"
    "  end\n"
    "  n = n + added\n"
    "end\n"
    "return n\n";

/* ARGV: prefix, kernel ids... Returns 1 (released now) or 0 per kernel. */
static const char RELEASE_LUA[] =
    "local P, out = ARGV[1], {}\n"
    "for i = 2, #ARGV do\n"
    "  local key = P..'alloc:'..ARGV[i]\n"
    "  local h = redis.call('HGETALL', key)\n"
    "  if #h == 0 then out[i - 1] = 0 else\n"
    "    local f = {}\n"
    "    for x = 1, #h, 2 do f[h[x]] = h[x + 1] end\n"
    "    redis.call('DEL', key)\n"
    "    local akey = P..'agent:'..f.agent\n"
    "    local has_agent = redis.call('EXISTS', akey) == 1\n"
    "    for s, v in string.gmatch(f.slots or '', '(%S+)=(%d+)') do\n"
    "      if has_agent then redis.call('HINCRBY', akey, 'used:'..s, '-'..v) end\n"
    "      for u in string.gmatch(f.usage or '', '%S+') do redis.call('HINCRBY', P..'usage:'..u, "
    "s, '-'..v) end\n"
    "    end\n"
    "    if has_agent then\n"
    "      for d, v in string.gmatch(f.devs or '', '(%d+)=(%d+)') do redis.call('HINCRBY', akey, "
    "'dev:'..d, '-'..v) end\n"
    "    end\n"
    "    if redis.call('DECR', P..'sess:'..f.session) <= 0 then\n"
    "      redis.call('DEL', P..'sess:'..f.session)\n"
    "      for u in string.gmatch(f.usage or '', '%S+') do redis.call('HINCRBY', P..'usage:'..u, "
    "'sessions', -1) end\n"
    "    end\n"
    "    out[i - 1] = 1\n"
    "  end\n"
    "end\n"
    "return out\n";

/* ARGV: prefix. "ok" or where the invariant breaks (the scheduler's tests and the
 * registry's reconcile pass). */
static const char CHECK_LUA[] =
    "local P = ARGV[1]\n"
    "local sums, usage, sess, sessusage = {}, {}, {}, {}\n"
    "local function add(t, k, f, n)\n"
    "  local x = t[k]; if not x then x = {}; t[k] = x end; x[f] = (x[f] or 0) + n\n"
    "end\n"
    "local function hash(key)\n"
    "  local h, f = redis.call('HGETALL', key), {}\n"
    "  for x = 1, #h, 2 do f[h[x]] = h[x + 1] end\n"
    "  return f\n"
    "end\n"
    "for _, key in ipairs(redis.call('KEYS', P..'alloc:*')) do\n"
    "  local f = hash(key)\n"
    "  local ak = P..'agent:'..(f.agent or '?')\n"
    "  for s, v in string.gmatch(f.slots or '', '(%S+)=(%d+)') do\n"
    "    add(sums, ak, 'used:'..s, tonumber(v))\n"
    "    for u in string.gmatch(f.usage or '', '%S+') do add(usage, P..'usage:'..u, s, "
    "tonumber(v)) end\n"
    "  end\n"
    "  for d, v in string.gmatch(f.devs or '', '(%d+)=(%d+)') do add(sums, ak, 'dev:'..d, "
    "tonumber(v)) end\n"
    "  local sid = f.session or '?'\n"
    "  sess[sid] = (sess[sid] or 0) + 1\n"
    "  sessusage[sid] = f.usage or ''\n"
    "end\n"
    "for sid, n in pairs(sess) do\n"
    "  local c = tonumber(redis.call('GET', P..'sess:'..sid) or '0')\n"
    "  if c ~= n then return P..'sess:'..sid..' is '..c..' but '..n..' kernels hold slots' end\n"
    "  for u in string.gmatch(sessusage[sid], '%S+') do add(usage, P..'usage:'..u, 'sessions', 1) "
    "end\n"
    "end\n"
    "for _, key in ipairs(redis.call('KEYS', P..'sess:*')) do\n"
    "  if not sess[string.sub(key, #P + 6)] then return key..' exists without allocations' end\n"
    "end\n"
    "for _, key in ipairs(redis.call('KEYS', P..'agent:*')) do\n"
    "  local f, want = hash(key), sums[key] or {}\n"
    "  for k, v in pairs(f) do\n"
    "    local used = string.sub(k, 1, 5) == 'used:'\n"
    "    if used or string.sub(k, 1, 4) == 'dev:' then\n"
    "      local w = want[k] or 0\n"
    "      if tonumber(v) ~= w then return key..' '..k..' is '..v..' but its allocations sum to "
    "'..w end\n"
    "      local cap = used and f['cap:'..string.sub(k, 6)] or f['devcap:'..string.sub(k, 5)]\n"
    "      if tonumber(v) > tonumber(cap or '0') then return key..' '..k..' '..v..' is above "
    "capacity' end\n"
    "    end\n"
    "  end\n"
    "  for k, w in pairs(want) do\n"
    "    if w ~= 0 and f[k] == nil then return key..' '..k..' is missing but its allocations sum "
    "to '..w end\n"
    "  end\n"
    "  sums[key] = nil\n"
    "end\n"
    "for key, _ in pairs(sums) do return 'allocations on '..key..', which does not exist' end\n"
    "for _, key in ipairs(redis.call('KEYS', P..'usage:*')) do\n"
    "  local f, want = hash(key), usage[key] or {}\n"
    "  for k, v in pairs(f) do\n"
    "    if tonumber(v) ~= (want[k] or 0) then return key..' '..k..' is '..v..' but allocations "
    "sum to '..(want[k] or 0) end\n"
    "  end\n"
    "  for k, w in pairs(want) do\n"
    "    if w ~= 0 and f[k] == nil then return key..' '..k..' is missing' end\n"
    "  end\n"
    "  usage[key] = nil\n"
    "end\n"
    "for key, t in pairs(usage) do\n"
    "  for k, w in pairs(t) do if w ~= 0 then return key..' is missing' end end\n"
    "end\n"
    "return 'ok'\n";

/* ARGV: prefix. Every reservation: kernel id, session id, agent id (flat). */
static const char ALLOCS_LUA[] =
    "local P, out, cursor = ARGV[1], {}, '0'\n"
    "repeat\n"
    "  local r = redis.call('SCAN', cursor, 'MATCH', P..'alloc:*', 'COUNT', 1000)\n"
    "  cursor = r[1]\n"
    "  for _, key in ipairs(r[2]) do\n"
    "    local f = redis.call('HMGET', key, 'session', 'agent')\n"
    "    out[#out + 1] = string.sub(key, #P + 7)\n"
    "    out[#out + 1] = f[1] or ''\n"
    "    out[#out + 1] = f[2] or ''\n"
    "  end\n"
    "until cursor == '0'\n"
    "return out\n";

struct occ {
    rds *r;
    char *prefix;
    rds_script set_agent, wipe, restore, release, check, allocs;
};

occ *occ_new(rds *r, const char *prefix)
{
    occ *o = ts_calloc(1, sizeof(*o));
    o->r = r;
    o->prefix = ts_strdup(prefix ? prefix : "");
    o->set_agent.source = SET_AGENT_LUA;
    o->wipe.source = WIPE_LUA;
    o->restore.source = RESTORE_LUA;
    o->release.source = RELEASE_LUA;
    o->check.source = CHECK_LUA;
    o->allocs.source = ALLOCS_LUA;
    return o;
}

void occ_free(occ *o)
{
    if (!o) return;
    free(o->prefix);
    free(o);
}

rds *occ_rds(const occ *o)
{
    return o->r;
}

char *occ_key(const occ *o, const char *kind, const char *id)
{
    return ts_asprintf("%s%s%s", o->prefix, kind, id ? id : "");
}

/* ---- encodings --------------------------------------------------------------------------- */

char *occ_enc_slots(const slots_t *s)
{
    char buf[SLOTS_MAX * (SLOT_NAME_MAX + 24)];
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; s && i < SLOTS_MAX; i++)
        if (slots_get(s, i) > 0)
            off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s=%lld", off ? " " : "",
                                    slot_name(i), (long long)s->v[i]);
    return ts_strdup(buf);
}

char *occ_enc_devs(const occ_dev *d, int n)
{
    char buf[OCC_MAX_DEVICES * 24];
    size_t off = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && off < sizeof(buf); i++)
        off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%d=%d", off ? " " : "", d[i].dev,
                                (int)d[i].shares);
    return ts_strdup(buf);
}

bool occ_plain_id(const char *what, const char *id, ts_err *err)
{
    if (!id || !*id) {
        ts_err_set(err, "%s is empty", what);
        return false;
    }
    for (const char *p = id; *p; p++)
        if (isspace((unsigned char)*p) || *p == '=') {
            ts_err_set(err, "%s '%s' contains a blank or '='", what, id);
            return false;
        }
    return true;
}

/* ---- argument lists ---------------------------------------------------------------------- */

/* What o's scripts get: o->r's EVALSHA with error replies as errors. */
static redisReply *eval(occ *o, rds_script *s, rds_args *a, ts_err *err)
{
    return rds_eval_args(o->r, s, a, err);
}

/* ---- operations -------------------------------------------------------------------------- */

bool occ_set_agent(occ *o, const occ_agent *ag, ts_err *err)
{
    if (!occ_plain_id("agent id", ag->id, err)) return false;
    if (ag->ndev < 0 || ag->ndev > OCC_MAX_DEVICES) {
        ts_err_set(err, "agent %s: bad device count %d", ag->id, ag->ndev);
        return false;
    }
    rds_args a = {0};
    rds_args_push(&a, o->prefix);
    rds_args_push(&a, ag->id);
    rds_args_push(&a, ag->schedulable ? "1" : "0");
    rds_args_own(&a, occ_enc_slots(ag->total));
    occ_dev d[OCC_MAX_DEVICES];
    for (int i = 0; i < ag->ndev; i++)
        d[i] = (occ_dev){i, ag->dev_cap[i]};
    rds_args_own(&a, occ_enc_devs(d, ag->ndev));
    rds_args_push(&a, ag->drain == OCC_DRAIN_ON ? "1" : ag->drain == OCC_DRAIN_OFF ? "0" : "");
    redisReply *rep = eval(o, &o->set_agent, &a, err);
    rds_args_free(&a);
    if (!rep) return false;
    freeReplyObject(rep);
    return true;
}

bool occ_push_sessions(rds_args *a, const occ_session *s, int n, ts_err *err)
{
    for (int i = 0; i < n; i++) {
        if (!occ_plain_id("session id", s[i].session_id, err)) return false;
        if (s[i].nk <= 0) {
            ts_err_set(err, "session %s has no kernels", s[i].session_id);
            return false;
        }
        rds_args_push(a, s[i].session_id);
        rds_args_own(a, ts_asprintf("%d", s[i].nk));
        int nu = 0;
        for (int sc = 0; sc < OCC_SCOPES; sc++)
            nu += s[i].scope[sc] && s[i].scope[sc][0];
        rds_args_own(a, ts_asprintf("%d", nu));
        for (int sc = 0; sc < OCC_SCOPES; sc++) {
            if (!s[i].scope[sc] || !s[i].scope[sc][0]) continue;
            if (!occ_plain_id("owner id", s[i].scope[sc], err)) return false;
            rds_args_own(a, ts_asprintf("%s%s", occ_scope_tags[sc], s[i].scope[sc]));
            rds_args_push(a, s[i].limits[sc] ? s[i].limits[sc] : "");
        }
        for (int k = 0; k < s[i].nk; k++) {
            const occ_kernel *kk = &s[i].k[k];
            if (!occ_plain_id("kernel id", kk->kernel_id, err) ||
                !occ_plain_id("agent id", kk->agent_id, err))
                return false;
            rds_args_push(a, kk->kernel_id);
            rds_args_push(a, kk->agent_id);
            rds_args_own(a, occ_enc_slots(kk->slots));
            rds_args_own(a, occ_enc_devs(kk->dev, kk->ndev));
        }
    }
    return true;
}

static bool simple_cmd(occ *o, int argc, const char **argv, ts_err *err)
{
    redisReply *rep = rds_command(o->r, argc, argv, NULL, err);
    if (!rep) return false;
    bool ok = rep->type != REDIS_REPLY_ERROR;
    if (!ok) ts_err_set(err, "Redis %s: %s", argv[0], rep->str);
    freeReplyObject(rep);
    return ok;
}

bool occ_lock(occ *o, int ms, ts_err *err)
{
    char *lock = occ_key(o, OCC_KEY_REBUILD, NULL);
    char px[16];
    snprintf(px, sizeof(px), "%d", ms > 0 ? ms : 1);
    const char *set[5] = {"SET", lock, "1", "PX", px};
    bool ok = simple_cmd(o, 5, set, err);
    free(lock);
    return ok;
}

bool occ_unlock(occ *o, ts_err *err)
{
    char *lock = occ_key(o, OCC_KEY_REBUILD, NULL);
    const char *del[2] = {"DEL", lock};
    bool ok = simple_cmd(o, 2, del, err);
    free(lock);
    return ok;
}

bool occ_rebuild(occ *o, const occ_agent *agents, int nagents, const occ_session *sessions,
                 int nsessions, ts_err *err)
{
    rds_args a = {0};
    rds_args_push(&a, o->prefix);
    rds_args_push(&a, "60000");
    redisReply *rep = eval(o, &o->wipe, &a, err);
    rds_args_free(&a);
    if (!rep) return false;
    freeReplyObject(rep);
    bool ok = true;
    for (int i = 0; i < nagents && ok; i++)
        ok = occ_set_agent(o, &agents[i], err);
    enum { BATCH = 256 };
    for (int i = 0; i < nsessions && ok; i += BATCH) {
        int n = nsessions - i < BATCH ? nsessions - i : BATCH;
        rds_args b = {0};
        rds_args_push(&b, o->prefix);
        rds_args_own(&b, ts_asprintf("%d", n));
        ok = occ_push_sessions(&b, sessions + i, n, err);
        redisReply *r2 = ok ? eval(o, &o->restore, &b, err) : NULL;
        rds_args_free(&b);
        if (!r2)
            ok = false;
        else
            freeReplyObject(r2);
    }
    char *lock = occ_key(o, OCC_KEY_REBUILD, NULL);
    const char *del[2] = {"DEL", lock};
    ts_err e2;
    bool unlocked = simple_cmd(o, 2, del, ok ? err : &e2);
    free(lock);
    if (ok && unlocked) {
        char *marker = occ_key(o, OCC_KEY_MARKER, NULL);
        char now[24];
        snprintf(now, sizeof(now), "%lld", (long long)ts_now_wall_ms());
        const char *set[3] = {"SET", marker, now};
        ok = simple_cmd(o, 3, set, err);
        free(marker);
    }
    if (!ok) ts_err_prefix(err, "rebuild");
    return ok && unlocked;
}

static bool exists(occ *o, char *key, bool *present, ts_err *err)
{
    const char *argv[2] = {"EXISTS", key};
    redisReply *rep = rds_command(o->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    bool ok = rep->type == REDIS_REPLY_INTEGER;
    if (ok)
        *present = rep->integer > 0;
    else
        ts_err_set(err, "Redis EXISTS: unexpected reply");
    freeReplyObject(rep);
    return ok;
}

bool occ_marker_present(occ *o, bool *present, ts_err *err)
{
    return exists(o, occ_key(o, OCC_KEY_MARKER, NULL), present, err);
}

bool occ_agent_present(occ *o, const char *id, bool *present, ts_err *err)
{
    return exists(o, occ_key(o, OCC_KEY_AGENT, id), present, err);
}

bool occ_read_used(occ *o, const char *id, slots_t *used, int32_t dev_used[OCC_MAX_DEVICES],
                   bool *present, ts_err *err)
{
    char *key = occ_key(o, OCC_KEY_AGENT, id);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(o->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    slots_clear(used);
    memset(dev_used, 0, sizeof(int32_t) * OCC_MAX_DEVICES);
    *present = rep->type == REDIS_REPLY_ARRAY && rep->elements > 0;
    for (size_t i = 0; *present && i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *val = rep->element[i + 1]->str;
        if (!f || !val) continue;
        long long n = strtoll(val, NULL, 10);
        if (strncmp(f, "used:", 5) == 0) {
            int sid;
            if (slot_intern(f + 5, &sid, NULL)) slots_put(used, sid, n);
        } else if (strncmp(f, "dev:", 4) == 0) {
            int d = atoi(f + 4);
            if (d >= 0 && d < OCC_MAX_DEVICES) dev_used[d] = (int32_t)n;
        }
    }
    freeReplyObject(rep);
    return true;
}

bool occ_release(occ *o, const char *const *kernel_ids, int n, bool *released, int *count,
                 ts_err *err)
{
    if (count) *count = 0;
    if (n <= 0) return true;
    rds_args a = {0};
    rds_args_push(&a, o->prefix);
    for (int i = 0; i < n; i++) {
        if (!occ_plain_id("kernel id", kernel_ids[i], err)) {
            rds_args_free(&a);
            return false;
        }
        rds_args_push(&a, kernel_ids[i]);
    }
    redisReply *rep = rds_eval_args(o->r, &o->release, &a, err);
    rds_args_free(&a);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
        ts_err_set(err, "Redis release: unexpected reply");
        freeReplyObject(rep);
        return false;
    }
    for (int i = 0; i < n; i++) {
        bool r = rep->element[i]->type == REDIS_REPLY_INTEGER && rep->element[i]->integer == 1;
        if (released) released[i] = r;
        if (count) *count += r;
    }
    freeReplyObject(rep);
    return true;
}

bool occ_check(occ *o, bool *holds, char *why, size_t size, ts_err *err)
{
    *holds = false;
    rds_args a = {0};
    rds_args_push(&a, o->prefix);
    redisReply *rep = rds_eval_args(o->r, &o->check, &a, err);
    rds_args_free(&a);
    if (!rep) return false;
    *holds = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "ok") == 0;
    if (why) ts_strlcpy(why, rep->type == REDIS_REPLY_STRING ? rep->str : "?", size);
    freeReplyObject(rep);
    return true;
}

bool occ_list_allocs(occ *o, occ_alloc **out, size_t *count, ts_err *err)
{
    *out = NULL;
    *count = 0;
    rds_args a = {0};
    rds_args_push(&a, o->prefix);
    redisReply *rep = rds_eval_args(o->r, &o->allocs, &a, err);
    rds_args_free(&a);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements % 3 != 0) {
        ts_err_set(err, "Redis allocations: unexpected reply");
        freeReplyObject(rep);
        return false;
    }
    size_t n = rep->elements / 3;
    occ_alloc *v = ts_calloc(n + 1, sizeof(*v));
    for (size_t i = 0; i < n; i++) {
        redisReply *const *e = rep->element + (size_t)i * 3;
        ts_strlcpy(v[i].kernel_id, e[0]->type == REDIS_REPLY_STRING ? e[0]->str : "",
                   sizeof(v[i].kernel_id));
        ts_strlcpy(v[i].session_id, e[1]->type == REDIS_REPLY_STRING ? e[1]->str : "",
                   sizeof(v[i].session_id));
        ts_strlcpy(v[i].agent_id, e[2]->type == REDIS_REPLY_STRING ? e[2]->str : "",
                   sizeof(v[i].agent_id));
    }
    freeReplyObject(rep);
    *out = v;
    *count = n;
    return true;
}
