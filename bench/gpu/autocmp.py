import glob,re,statistics as S,sys
# (one script for every session: per pass, open counted from the same run, and the binary's own column)
# per-run files d{8,32}-kquant-{old,new}-{r}.md: from the first table, auto / best single per pass and
# with open spread over the iterations (the same run's open, as old binaries report it); plus the new
# binaries' own "open counted" column (least whole time over the repeats).
d=sys.argv[1] if len(sys.argv)>1 else '.'
pre=sys.argv[2] if len(sys.argv)>2 else ''  # a file prefix, e.g. h100-s13-cpu16-call3-
res={}
for f in sorted(glob.glob(d+'/'+pre+'d*-kquant-*-*.md')):
    m=re.search(r'(d\d+)-(kquant-\w+)-(\d+)\.md$',f); dim,b,r=m.groups()
    rows={}; own={}
    for line in open(f):
        c=[x.strip() for x in line.split('|')]
        if len(c)>12 and c[2]=='cpu' and re.match(r'^[\d.]+$',c[5] or 'x'):
            case=' '.join(c[1].split()[2:]); rows.setdefault(case,{})[c[3]]=(float(c[5]),float(c[6]),int(c[7]))
        elif len(c)>8 and c[2]=='cpu' and re.match(r'^[\d.]+$',c[3] or 'x'):
            own[' '.join(c[1].split()[2:])]=float(c[7])
    for case,v in rows.items():
        if 'auto' not in v: continue
        a=v['auto']; singles=[x for k,x in v.items() if k!='auto']
        pp=a[0]/min(x[0] for x in singles)
        oc=(a[0]+a[1]/a[2])/min(x[0]+x[1]/x[2] for x in singles)
        res.setdefault((dim,case,b),[]).append((pp,oc,own.get(case)))
for i,label in ((0,'per pass'),(1,'open counted (same run)'),(2,'open counted (binary\'s own column)')):
    print('==',label)
    tot={}
    for key in sorted(set((k[0],k[1]) for k in res)):
        line=f"{key[0]} {key[1]:14s}"
        for b in ('kquant-old','kquant-new'):
            rs=[x[i] for x in res.get(key+(b,),[]) if x[i] is not None]
            if not rs: continue
            tot.setdefault(b,[]).extend(rs)
            line+=f" | {b[7:]}: med {S.median(rs):.2f} miss {sum(1 for x in rs if x>1.10)}/{len(rs)}"
        print(line)
    for b,v in tot.items(): print(' ',b,'misses',sum(1 for x in v if x>1.10),'of',len(v))
