"""The page's stylesheet and script, inlined so the file works offline with no external request."""

from __future__ import annotations

CSS = """
:root{--fg:#1d1f23;--muted:#616875;--line:#d9dce1;--bg:#fff;--soft:#f4f6f8;--ok:#1a7f37;--bad:#c62828;
--warn:#9a6700;--accent:#0b5cad}
*{box-sizing:border-box}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg);
margin:0 auto;max-width:1200px;padding:1.5rem}
h1{font-size:1.5rem;margin:.2rem 0 1rem}h2{font-size:1.2rem;margin:1.6rem 0 .6rem}
h3,h4,h5,h6{font-size:1rem}
a{color:var(--accent)}
code,pre{font:13px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
pre{background:var(--soft);padding:.6rem .8rem;overflow:auto;white-space:pre-wrap;word-break:break-word;
border-radius:4px;margin:.3rem 0}
.summary{display:flex;flex-wrap:wrap;gap:.6rem;margin-bottom:1rem}
.card{border:1px solid var(--line);border-radius:6px;padding:.5rem .8rem;min-width:8rem}
.card b{display:block;font-size:1.15rem}.card span{color:var(--muted);font-size:.85rem}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:1rem}.charts figure{margin:0}
.charts figcaption{color:var(--muted);font-size:.85rem}
svg.bars rect{fill:var(--accent)}svg.bars rect.bad{fill:var(--bad)}
.controls{display:flex;flex-wrap:wrap;gap:.6rem;align-items:center;margin:.6rem 0}
table{border-collapse:collapse;width:100%}
th,td{border-bottom:1px solid var(--line);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:var(--soft);position:sticky;top:0;user-select:none}
th[data-type]{cursor:pointer}th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
tr.row{cursor:pointer}tr.row:hover{background:var(--soft)}
.status{font-weight:600}.s-answered{color:var(--ok)}.s-error,.s-budget,.s-time_limit,.s-max_steps{color:var(--bad)}
.s-answered_unformatted{color:var(--warn)}
td.answer{max-width:22rem}td.expected{color:var(--muted)}
pre.code{border-left:3px solid var(--line)}
.yes{color:var(--ok)}.no{color:var(--bad)}.unsure{color:var(--warn)}
details.task{border:1px solid var(--line);border-radius:6px;margin:.6rem 0;padding:.2rem .8rem}
details.task>summary{cursor:pointer;font-weight:600;padding:.4rem 0}
details.task[open]>summary{border-bottom:1px solid var(--line);margin-bottom:.6rem}
.meta{color:var(--muted);font-size:.85rem}
ol.timeline{list-style:none;padding:0;margin:0}
ol.timeline>li{border-left:3px solid var(--line);padding:.2rem 0 .6rem .8rem;margin:.4rem 0}
ol.timeline>li.format{border-left-color:var(--warn)}ol.timeline>li.tool{border-left-color:var(--bad)}
.tag{display:inline-block;font-size:.75rem;padding:0 .4rem;border-radius:3px;background:var(--soft);
border:1px solid var(--line);margin-left:.3rem}
.tag.warn{color:var(--warn);border-color:var(--warn)}.tag.bad{color:var(--bad);border-color:var(--bad)}
details.obs>summary{cursor:pointer;color:var(--muted)}
.pager{display:flex;gap:.5rem;align-items:center;margin:.4rem 0}
.hidden{display:none}
.live{color:var(--ok);font-size:.85rem}
.run-state{margin:.2rem 0 .6rem}.run-state.stopped{border-left:4px solid var(--bad);background:#fdecea;
padding:.5rem .8rem;border-radius:4px}
"""

SCRIPT = r"""
(function(){
"use strict";
var PAGE=100, page=0, sortKey=null, sortDir=1;
function $(s,r){return (r||document).querySelector(s);}
function $$(s,r){return Array.prototype.slice.call((r||document).querySelectorAll(s));}
function rows(){return $$("#tasks tbody tr.row");}
function matches(tr){
  var st=$("#f-status").value, co=$("#f-correct")?$("#f-correct").value:"", q=$("#f-text").value.toLowerCase();
  if(st && tr.dataset.status!==st) return false;
  if(co && tr.dataset.correct!==co) return false;
  if(q && tr.textContent.toLowerCase().indexOf(q)<0) return false;
  return true;
}
function apply(){
  var body=$("#tasks tbody"); if(!body) return;
  var all=rows();
  if(sortKey!==null){
    all.sort(function(a,b){
      var x=a.children[sortKey].dataset.v, y=b.children[sortKey].dataset.v;
      var nx=parseFloat(x), ny=parseFloat(y);
      var c=(!isNaN(nx)&&!isNaN(ny))?nx-ny:String(x).localeCompare(String(y));
      return c*sortDir;});
    all.forEach(function(tr){body.appendChild(tr);});
  }
  var shown=all.filter(matches), pages=Math.max(1,Math.ceil(shown.length/PAGE));
  if(page>=pages) page=pages-1;
  all.forEach(function(tr){tr.classList.add("hidden");});
  shown.slice(page*PAGE,(page+1)*PAGE).forEach(function(tr){tr.classList.remove("hidden");});
  $("#count").textContent=shown.length+" of "+all.length+" tasks";
  $("#page").textContent="page "+(page+1)+" of "+pages;
  $("#prev").disabled=page===0; $("#next").disabled=page>=pages-1;
}
function openTask(id){
  // #t-3 (the task's place) or #<task id> (as the task file names it) opens the task's card
  try{id=decodeURIComponent(id);}catch(e){}
  var d=document.getElementById(id);
  if(!d||!d.matches("details.task")) d=$$("details.task").filter(function(x){return x.dataset.id===id;})[0];
  if(!d) return;
  d.open=true; d.scrollIntoView({block:"start"});
}
function wire(){
  if(!$("#tasks")) return;
  $$(".controls select, .controls input").forEach(function(el){
    el.addEventListener("input",function(){page=0;apply();});});
  $("#prev").addEventListener("click",function(){page--;apply();});
  $("#next").addEventListener("click",function(){page++;apply();});
  $$("#tasks th[data-type]").forEach(function(th,i){
    th.addEventListener("click",function(){
      var idx=Array.prototype.indexOf.call(th.parentNode.children,th);
      sortDir=(sortKey===idx)?-sortDir:1; sortKey=idx;
      $$("#tasks th").forEach(function(h){h.removeAttribute("aria-sort");});
      th.setAttribute("aria-sort",sortDir>0?"ascending":"descending"); apply();});});
  $("#tasks tbody").addEventListener("click",function(ev){
    var tr=ev.target.closest("tr.row"); if(!tr||ev.target.closest("a")) return;
    ev.preventDefault(); history.replaceState(null,"","#"+tr.dataset.target); openTask(tr.dataset.target);});
  $(".controls").classList.remove("hidden");
  apply();
}
function live(){
  var el=$("#live"); if(!el) return;
  if(/[?&]token=/.test(location.search)) history.replaceState(null,"",location.pathname+location.hash);
  var version=el.dataset.version;
  if(el.dataset.done) return;
  var timer=setInterval(function(){
    fetch("state",{cache:"no-store"}).then(function(r){return r.json();}).then(function(s){
      if(String(s.version)===String(version)) return;
      version=s.version; if(s.done) clearInterval(timer);
      return fetch("./",{cache:"no-store"}).then(function(r){return r.text();}).then(function(text){
        var doc=new DOMParser().parseFromString(text,"text/html");
        var open=$$("details[open]").map(function(d){return d.id;});
        var keep={status:$("#f-status")&&$("#f-status").value,correct:$("#f-correct")&&$("#f-correct").value,
                  text:$("#f-text")&&$("#f-text").value};
        $("#app").innerHTML=doc.querySelector("#app").innerHTML;
        open.forEach(function(id){var d=document.getElementById(id); if(d) d.open=true;});
        if($("#f-status")){$("#f-status").value=keep.status||"";$("#f-text").value=keep.text||"";}
        if($("#f-correct")) $("#f-correct").value=keep.correct||"";
        wire();});
    }).catch(function(){});
  },1000);
}
wire(); live();
if(location.hash) openTask(location.hash.slice(1));
window.addEventListener("hashchange",function(){openTask(location.hash.slice(1));});
})();
"""
