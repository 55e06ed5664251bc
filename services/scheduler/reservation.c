/* reservation.c: occupancy in Redis through Lua scripts (see reservation.h). */
#include "services/scheduler/reservation.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- scripts ----------------------------------------------------------------------------- */

/* ARGV: prefix, mode ("check" | "rebuild"), nsessions, then per session:
 *   session id, nkernels, nusage, (usage id, limit)..., per kernel: kernel, agent, slots, devs.
 * A limit ("sessions=3 cpu=4000", "" = none) is checked against usage:<id>
 * before anything is reserved (mode check): what every scheduler instance
 * placed counts. Returns one string per session: "ok", "exists",
 * "refused:limit:<usage id>:<what>" or "refused:<why>". */
static const char RESERVE_LUA[] =
    "local P, mode, nsess = ARGV[1], ARGV[2], tonumber(ARGV[3])\n"
    "local i, out = 4, {}\n"
    "local locked = mode ~= 'rebuild' and redis.call('EXISTS', P..'rebuild') == 1\n"
    "local function parse(enc)\n"
    "  local t = {}\n"
    "  for k, v in string.gmatch(enc, '(%S+)=(%d+)') do t[#t + 1] = {k, v, tonumber(v)} end\n"
    "  return t\n"
    "end\n"
    "for s = 1, nsess do\n"
    "  local sid, nk, nu = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])\n"
    "  i = i + 3\n"
    "  local usage, limits = {}, {}\n"
    "  for u = 1, nu do usage[u] = ARGV[i]; limits[u] = ARGV[i + 1]; i = i + 2 end\n"
    "  local ks = {}\n"
    "  for k = 1, nk do\n"
    "    ks[k] = {id = ARGV[i], agent = ARGV[i + 1], slots = parse(ARGV[i + 2]),\n"
    "             slots_enc = ARGV[i + 2], devs = parse(ARGV[i + 3]), devs_enc = ARGV[i + 3]}\n"
    "    i = i + 4\n"
    "  end\n"
    "  local verdict\n"
    "  if locked then verdict = 'refused:occupancy is being rebuilt' end\n"
    "  local existing = 0\n"
    "  if not verdict then\n"
    "    for k = 1, nk do\n"
    "      local owner = redis.call('HGET', P..'alloc:'..ks[k].id, 'session')\n"
    "      if owner then\n"
    "        existing = existing + 1\n"
    "        if owner ~= sid then verdict = 'refused:kernel '..ks[k].id..' is reserved by "
    "session '..owner end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if not verdict and existing == nk then verdict = 'exists'\n"
    "  elseif not verdict and existing > 0 then\n"
    "    verdict = 'refused:some kernels of session '..sid..' are reserved already'\n"
    "  end\n"
    "  if not verdict and mode ~= 'rebuild' then\n"
    "    local total = {}\n"
    "    for k = 1, nk do\n"
    "      for _, kv in ipairs(ks[k].slots) do total[kv[1]] = (total[kv[1]] or 0) + kv[3] end\n"
    "    end\n"
    "    for u = 1, nu do\n"
    "      if limits[u] ~= '' then\n"
    "        local lim, names = parse(limits[u]), {}\n"
    "        for x, kv in ipairs(lim) do names[x] = kv[1] end\n"
    "        local h = redis.call('HMGET', P..'usage:'..usage[u], unpack(names))\n"
    "        for x, kv in ipairs(lim) do\n"
    "          local cur, add = tonumber(h[x] or '0'), (kv[1] == 'sessions') and 1 or (total[kv[1]] "
    "or 0)\n"
    "          if add > 0 and cur + add > kv[3] then\n"
    "            verdict = 'refused:limit:'..usage[u]..':'..kv[1]..' '..cur..' held + '..add..' > "
    "'..kv[3]; break\n"
    "          end\n"
    "        end\n"
    "        if verdict then break end\n"
    "      end\n"
    "    end\n"
    "  end\n"
    "  if not verdict and mode ~= 'rebuild' then\n"
    "    local need, order = {}, {}\n"
    "    for k = 1, nk do\n"
    "      local a = need[ks[k].agent]\n"
    "      if not a then a = {slots = {}, devs = {}}; need[ks[k].agent] = a; order[#order + 1] = "
    "ks[k].agent end\n"
    "      for _, kv in ipairs(ks[k].slots) do a.slots[kv[1]] = (a.slots[kv[1]] or 0) + kv[3] end\n"
    "      for _, kv in ipairs(ks[k].devs) do a.devs[kv[1]] = (a.devs[kv[1]] or 0) + kv[3] end\n"
    "    end\n"
    "    for _, ag in ipairs(order) do\n"
    "      local names = {'schedulable'}\n"
    "      for slot, _ in pairs(need[ag].slots) do\n"
    "        names[#names + 1] = 'cap:'..slot; names[#names + 1] = 'used:'..slot\n"
    "      end\n"
    "      for dev, _ in pairs(need[ag].devs) do\n"
    "        names[#names + 1] = 'devcap:'..dev; names[#names + 1] = 'dev:'..dev\n"
    "      end\n"
    "      local h = redis.call('HMGET', P..'agent:'..ag, unpack(names))\n"
    "      if not h[1] then verdict = 'refused:agent '..ag..' is not known'; break end\n"
    "      local f = {}\n"
    "      for x = 1, #names do f[names[x]] = h[x] or nil end\n"
    "      if f['schedulable'] == '0' then verdict = 'refused:agent '..ag..' is not "
    "schedulable'; break end\n"
    "      for slot, amt in pairs(need[ag].slots) do\n"
    "        if amt > 0 and tonumber(f['used:'..slot] or '0') + amt > tonumber(f['cap:'..slot] "
    "or '0') then\n"
    "          verdict = 'refused:agent '..ag..' has not enough '..slot; break\n"
    "        end\n"
    "      end\n"
    "      if verdict then break end\n"
    "      for dev, amt in pairs(need[ag].devs) do\n"
    "        if tonumber(f['dev:'..dev] or '0') + amt > tonumber(f['devcap:'..dev] or '0') then\n"
    "          verdict = 'refused:agent '..ag..' device '..dev..' has not enough shares'; break\n"
    "        end\n"
    "      end\n"
    "      if verdict then break end\n"
    "    end\n"
    "  end\n"
    "  if not verdict then\n"
    "    for k = 1, nk do\n"
    "      local kk = ks[k]\n"
    "      local akey = P..'agent:'..kk.agent\n"
    "      for _, kv in ipairs(kk.slots) do\n"
    "        redis.call('HINCRBY', akey, 'used:'..kv[1], kv[2])\n"
    "        for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, kv[1], kv[2]) end\n"
    "      end\n"
    "      for _, kv in ipairs(kk.devs) do redis.call('HINCRBY', akey, 'dev:'..kv[1], kv[2]) end\n"
    "      redis.call('HSET', P..'alloc:'..kk.id, 'session', sid, 'agent', kk.agent,\n"
    "                 'slots', kk.slots_enc, 'devs', kk.devs_enc, 'usage', table.concat(usage, ' "
    "'))\n"
    "    end\n"
    "    redis.call('INCRBY', P..'sess:'..sid, nk)\n"
    "    for _, u in ipairs(usage) do redis.call('HINCRBY', P..'usage:'..u, 'sessions', 1) end\n"
    "    verdict = 'ok'\n"
    "  end\n"
    "  out[s] = verdict\n"
    "end\n"
    "return out\n";

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

/* ARGV: prefix. "ok" or where the invariant breaks. */
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

struct resv {
    rds *r;
    char *prefix;
    rds_script reserve, release, check;
    occ *occ; /* capacity and rebuild (libcommon/occupancy.c) */
};

resv *resv_new(rds *r, const char *prefix)
{
    resv *v = ts_calloc(1, sizeof(*v));
    v->r = r;
    v->prefix = ts_strdup(prefix ? prefix : "");
    v->reserve.source = RESERVE_LUA;
    v->release.source = RELEASE_LUA;
    v->check.source = CHECK_LUA;
    v->occ = occ_new(r, v->prefix);
    return v;
}

void resv_free(resv *v)
{
    if (!v) return;
    occ_free(v->occ);
    free(v->prefix);
    free(v);
}

/* ---- argument building ------------------------------------------------------------------- */

static redisReply *eval(resv *v, rds_script *s, rds_args *a, ts_err *err)
{
    return rds_eval_args(v->r, s, a, err);
}

/* ---- operations -------------------------------------------------------------------------- */

static bool run_reserve(resv *v, const char *mode, const resv_session *s, int n, resv_result *out,
                        ts_err *err)
{
    rds_args a = {0};
    rds_args_push(&a, v->prefix);
    rds_args_push(&a, mode);
    rds_args_own(&a, ts_asprintf("%d", n));
    bool ok = occ_push_sessions(&a, s, n, err);
    redisReply *rep = ok ? eval(v, &v->reserve, &a, err) : NULL;
    rds_args_free(&a);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
        ts_err_set(err, "Redis reserve: unexpected reply");
        freeReplyObject(rep);
        return false;
    }
    for (int i = 0; i < n; i++) {
        const char *r = rep->element[i]->type == REDIS_REPLY_STRING ? rep->element[i]->str : "?";
        out[i].reason[0] = '\0';
        if (strcmp(r, "ok") == 0) {
            out[i].status = RESV_OK;
        } else if (strcmp(r, "exists") == 0) {
            out[i].status = RESV_EXISTS;
        } else {
            out[i].status = RESV_REFUSED;
            ts_strlcpy(out[i].reason, strncmp(r, "refused:", 8) == 0 ? r + 8 : r,
                       sizeof(out[i].reason));
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_reserve(resv *v, const resv_session *s, int n, resv_result *out, ts_err *err)
{
    if (n <= 0) return true;
    return run_reserve(v, "check", s, n, out, err);
}

int resv_release(resv *v, const char *const *kernel_ids, int n, bool *released, ts_err *err)
{
    if (n <= 0) return 0;
    rds_args a = {0};
    rds_args_push(&a, v->prefix);
    for (int i = 0; i < n; i++) {
        if (!occ_plain_id("kernel id", kernel_ids[i], err)) {
            rds_args_free(&a);
            return -1;
        }
        rds_args_push(&a, kernel_ids[i]);
    }
    redisReply *rep = eval(v, &v->release, &a, err);
    rds_args_free(&a);
    if (!rep) return -1;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements != (size_t)n) {
        ts_err_set(err, "Redis release: unexpected reply");
        freeReplyObject(rep);
        return -1;
    }
    int count = 0;
    for (int i = 0; i < n; i++) {
        bool r = rep->element[i]->type == REDIS_REPLY_INTEGER && rep->element[i]->integer == 1;
        if (released) released[i] = r;
        count += r;
    }
    freeReplyObject(rep);
    return count;
}

bool resv_set_agent(resv *v, const resv_agent *ag, ts_err *err)
{
    return occ_set_agent(v->occ, ag, err);
}

bool resv_read_agent(resv *v, const char *id, slots_t *total, slots_t *used, int *ndev,
                     int32_t dev_cap[32], int32_t dev_used[32], ts_err *err)
{
    char *key = occ_key(v->occ, OCC_KEY_AGENT, id);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(v->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0) {
        ts_err_set(err, "agent %s is not in Redis", id);
        freeReplyObject(rep);
        return false;
    }
    slots_clear(total);
    slots_clear(used);
    *ndev = 0;
    memset(dev_cap, 0, sizeof(int32_t) * 32);
    memset(dev_used, 0, sizeof(int32_t) * 32);
    for (size_t i = 0; i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *val = rep->element[i + 1]->str;
        long long n = strtoll(val ? val : "0", NULL, 10);
        if (!f) continue;
        if (strncmp(f, "cap:", 4) == 0 || strncmp(f, "used:", 5) == 0) {
            bool cap = f[0] == 'c';
            int sid = slot_intern(f + (cap ? 4 : 5), NULL);
            if (sid >= 0) slots_put(cap ? total : used, sid, n);
        } else if (strncmp(f, "devcap:", 7) == 0 || strncmp(f, "dev:", 4) == 0) {
            bool cap = f[3] == 'c';
            int d = atoi(f + (cap ? 7 : 4));
            if (d < 0 || d >= 32) continue;
            (cap ? dev_cap : dev_used)[d] = (int32_t)n;
            if (cap && d + 1 > *ndev) *ndev = d + 1;
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_read_usage(resv *v, const char *usage_id, int *sessions, slots_t *used, ts_err *err)
{
    char *key = occ_key(v->occ, OCC_KEY_USAGE, usage_id);
    const char *argv[2] = {"HGETALL", key};
    redisReply *rep = rds_command(v->r, 2, argv, NULL, err);
    free(key);
    if (!rep) return false;
    *sessions = 0;
    slots_clear(used);
    for (size_t i = 0; rep->type == REDIS_REPLY_ARRAY && i + 1 < rep->elements; i += 2) {
        const char *f = rep->element[i]->str, *val = rep->element[i + 1]->str;
        long long n = strtoll(val ? val : "0", NULL, 10);
        if (!f || n <= 0) continue;
        if (strcmp(f, "sessions") == 0) {
            *sessions = n > INT_MAX ? INT_MAX : (int)n;
        } else {
            int sid = slot_intern(f, NULL);
            if (sid >= 0) slots_put(used, sid, n);
        }
    }
    freeReplyObject(rep);
    return true;
}

bool resv_rebuild(resv *v, const resv_agent *agents, int nagents, const resv_session *sessions,
                  int nsessions, ts_err *err)
{
    return occ_rebuild(v->occ, agents, nagents, sessions, nsessions, err);
}

int resv_check_invariant(resv *v, char *why, size_t size, ts_err *err)
{
    rds_args a = {0};
    rds_args_push(&a, v->prefix);
    redisReply *rep = eval(v, &v->check, &a, err);
    rds_args_free(&a);
    if (!rep) return -1;
    int ok = rep->type == REDIS_REPLY_STRING && strcmp(rep->str, "ok") == 0;
    if (why) ts_strlcpy(why, rep->type == REDIS_REPLY_STRING ? rep->str : "?", size);
    freeReplyObject(rep);
    return ok;
}
