import glob,re,statistics as S,sys
# Auto's own whole time (ms/iter*iters + open) old vs new, and the best single's, per case (median over rounds)
d=sys.argv[1]
res={}
for f in sorted(glob.glob(d+'/d*-kquant-*-*.md')):
    m=re.search(r'(d\d+)-kquant-(\w+)-(\d+)\.md$',f); dim,b,r=m.groups()
    for line in open(f):
        c=[x.strip() for x in line.split('|')]
        if len(c)>12 and c[2]=='cpu' and re.match(r'^[\d.]+$',c[5] or 'x'):
            case=dim+' '+' '.join(c[1].split()[2:]); t=float(c[5])*int(c[7])+float(c[6])
            res.setdefault((case,b,c[3]),[]).append(t)
cases=sorted(set(k[0] for k in res))
print(f"{'case':34s} {'auto old':>9s} {'auto new':>9s} {'new/old':>7s} | {'bounds old':>10s} {'bounds new':>10s} {'new/old':>7s}")
rs=[]
for c in cases:
    g=lambda b,a: S.median(res[(c,b,a)]) if (c,b,a) in res else float('nan')
    ao,an,bo,bn=g('old','auto'),g('new','auto'),g('old','bounds'),g('new','bounds')
    rs.append(an/ao)
    print(f"{c:34s} {ao:9.1f} {an:9.1f} {an/ao:7.2f} | {bo:10.1f} {bn:10.1f} {bn/bo:7.2f}")
print('auto new/old: median %.2f, max %.2f, min %.2f'%(S.median(rs),max(rs),min(rs)))
