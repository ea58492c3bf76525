// Deep research mode: with "Deep research" ticked, the form asks for the plan first (one model call); the user
// edits it (change, remove, add sub-questions), sets the rounds (depth) and approves it, and only then does the
// research start; each sub-question's progress streams in, then the report with its sources and each claim's
// verdict, with links to report.html and downloads as PDF and DOCX.
// Every text from the model or the web goes in with textContent, never as HTML.
(function(){
"use strict";
var $=function(s){return document.querySelector(s);};
var key=null, events=null;

var el=window.agentPage.el, money=window.agentPage.money, safeHref=window.agentPage.safeHref;  // app.js's
function running(on){ $("#stop").classList.toggle("hidden",!on); $("#send").disabled=on; }
function status(text){ $("#status").textContent=text||""; }

function researchEl(question){
  var t=el("article","turn research"); t.appendChild(el("p","question",question));
  t.appendChild(el("p","meta phase","planning the sub-questions…"));
  t.appendChild(el("ol","plan")); $("#turns").appendChild(t); return t;
}

function renderPlan(box, questions, keep){
  var ol=box.querySelector(".plan"); if(!keep) ol.textContent="";
  questions.forEach(function(q){
    var li=el("li","sub"); li.dataset.n=q.n; li.appendChild(el("span",null,q.text));
    if(q.round>1) li.appendChild(el("span","meta"," (round "+q.round+", a follow-up)"));
    li.appendChild(el("span","verdict state","waiting")); ol.appendChild(li);
  });
}

function renderSub(box, e){
  var li=box.querySelector('.plan li[data-n="'+e.n+'"]'); if(!li) return;
  var state=li.querySelector(".state");
  state.textContent=e.state+(e.done&&e.sources!==undefined?" · "+e.sources+(e.sources===1?" source":" sources"):"");
  state.className="verdict state"+(e.done?(e.state.indexOf("answered")===0?" supported":" unsupported"):"");
}

function renderReport(box, r, html, downloads){
  var out=el("section","answer"+(r.partial||r.nothing_read?" failed":""));
  out.appendChild(el("h3",null,r.title));
  if(r.partial) out.appendChild(el("p","note","Partial report: "+r.partial));
  var cited=(r.citations||[]);
  if(cited.length){
    var counts={}; cited.forEach(function(c){counts[c.verdict]=(counts[c.verdict]||0)+1;});
    out.appendChild(el("p","claims",cited.length+" claims: "+Object.keys(counts).map(function(k){
      return counts[k]+" "+k.replace("_"," ");}).join(", ")+(r.marked?" · "+r.marked+" marked ⚠ unsupported":"")));
  }
  out.appendChild(bodyOf(r.body));
  if((r.sources||[]).length||(r.also_read||[]).length) out.appendChild(el("h4",null,"Sources"));
  if((r.sources||[]).length){
    var ol=el("ol","sources");
    r.sources.forEach(function(s){ var li=sourceItem(s); li.value=s.n; ol.appendChild(li); });
    out.appendChild(ol);
  }
  if((r.also_read||[]).length){  // read, not cited: a stopped research's sources are here
    out.appendChild(el("p","meta","Also read, not cited:"));
    var ul0=el("ul","also-read"); r.also_read.forEach(function(s){ ul0.appendChild(sourceItem(s)); });
    out.appendChild(ul0);
  }
  if(cited.length){
    out.appendChild(el("h4",null,"Citations checked"));
    var ul=el("ul","citations");
    cited.forEach(function(c){
      var li=el("li"); li.appendChild(el("span","verdict "+c.verdict,c.verdict.replace("_"," ")));
      if(c.retracted) li.appendChild(el("span","verdict retracted","⚠ cites a retracted paper"));
      li.appendChild(document.createTextNode(" "+(c.n===null?"":"["+c.n+"] ")+c.claim)); ul.appendChild(li);
    });
    out.appendChild(ul);
  }
  var more=el("p","meta",money(r.cost)+" · ");
  var a=el("a",null,"open the full report (sources, the passages each claim was judged against)"); a.href=html; a.target="_blank";
  more.appendChild(a);
  Object.keys(downloads||{}).forEach(function(f){
    more.appendChild(document.createTextNode(" · "));
    var d=el("a","download","download "+f.toUpperCase()); d.href=downloads[f]; d.setAttribute("download",""); more.appendChild(d);
  });
  out.appendChild(more);
  box.appendChild(out);
}

// A source as a list item: a link for a web page (never a loopback one), else its title or address as text.
function sourceItem(s){
  var li=el("li"), href=safeHref(s.url);
  var link=el(href?"a":"span",null,s.title||s.url); if(href){link.href=href; link.rel="noreferrer noopener"; link.target="_blank";}
  li.appendChild(link); return li;
}

// The writer's Markdown as the page shows it: a `## ` line is a heading, other lines paragraphs; all as text.
function bodyOf(text){
  var div=el("div","text"), para=[];
  function flush(){ if(para.join("").trim()) div.appendChild(el("p",null,para.join("\n").trim())); para=[]; }
  String(text||"").split("\n").forEach(function(line){
    var m=/^#{1,4}[ \t]+(.+)$/.exec(line);
    if(m){ flush(); div.appendChild(el("h4","section",m[1])); }
    else if(!line.trim()) flush();
    else para.push(line);
  });
  flush();
  return div;
}

function listen(box){
  if(events) events.close();
  events=new EventSource("/api/research/"+encodeURIComponent(key)+"/events");
  events.onmessage=function(m){
    var e=JSON.parse(m.data);
    if(e.type==="plan") renderPlan(box, e.questions);
    else if(e.type==="round") renderPlan(box, e.questions.map(function(q){q.round=e.round; return q;}), true);
    else if(e.type==="sub") renderSub(box, e);
    else if(e.type==="phase") box.querySelector(".phase").textContent=e.text;
    else if(e.type==="report"){ box.querySelector(".phase").textContent=""; renderReport(box, e.report, e.html, e.downloads); }
    else if(e.type==="failed"){ box.appendChild(el("p","answer failed","The research failed: "+e.error)); }
  };
  events.addEventListener("end",function(){ events.close(); events=null; key=null; running(false); status(""); });
}

function post(url, fd){
  return fetch(url,{method:"POST",body:fd,credentials:"same-origin"}).then(function(r){
    return r.json().then(function(j){ if(!r.ok) throw new Error(j.error||r.statusText); return j; });
  });
}

function subRow(ol, text){
  var li=el("li","sub-edit"); var input=el("input","sub-text"); input.type="text"; input.value=text||"";
  input.setAttribute("aria-label","sub-question"); li.appendChild(input);
  var rm=el("button","remove","Remove"); rm.type="button"; rm.onclick=function(){ li.remove(); };
  li.appendChild(rm); ol.appendChild(li); return input;
}

// The plan to review: each sub-question editable or removable, more can be added, the rounds set; Approve starts it.
function review(q, file, plan){
  var t=el("article","turn research review"); t.appendChild(el("p","question",q));
  t.appendChild(el("p","meta phase","Review the plan: change, remove or add sub-questions, set the rounds, then approve."));
  var ol=el("ol","plan-edit"); plan.forEach(function(text){ subRow(ol,text); }); t.appendChild(ol);
  var add=el("button","add","Add a sub-question"); add.type="button"; add.onclick=function(){ subRow(ol,"").focus(); };
  var label=el("label","depth-label","Rounds (depth) "); var depth=el("input","depth"); depth.type="number";
  depth.min="1"; depth.max="4"; depth.value="1"; label.appendChild(depth);
  var go=el("button","approve","Approve and research"); go.type="button";
  var cancel=el("button","cancel","Cancel"); cancel.type="button";
  var row=el("div","row"); [add,label,go,cancel].forEach(function(x){ row.appendChild(x); }); t.appendChild(row);
  $("#turns").appendChild(t);
  cancel.onclick=function(){ t.remove(); status(""); };
  go.onclick=function(){
    var subs=Array.prototype.map.call(ol.querySelectorAll(".sub-text"),function(i){ return i.value.trim(); })
      .filter(function(x){ return x; });
    if(!subs.length){ status("the plan needs a sub-question"); return; }
    var fd=new FormData(); fd.append("question",q); fd.append("plan",subs.join("\n")); fd.append("depth",depth.value||"1");
    if(file) fd.append("file",file);
    go.disabled=true; running(true); status("researching…");
    post("/api/research",fd).then(function(j){
      key=j.research; t.remove(); listen(researchEl(q));
    }).catch(function(err){ go.disabled=false; running(false); status("error: "+err.message); });
  };
}

function start(ev){
  if(ev.target!==$("#ask")||!$("#deep").checked) return;  // an ordinary question: app.js asks it
  ev.preventDefault(); ev.stopImmediatePropagation(); if(key||$(".review")) return;
  var q=$("#question").value.trim(); if(!q) return;
  var file=$("#file").files[0]||null;
  var fd=new FormData(); fd.append("question",q); if(file) fd.append("file_name",file.name);
  running(true); status("planning the sub-questions…");
  post("/api/research/plan",fd).then(function(j){
    $("#question").value=""; $("#file").value=""; running(false); status(""); review(q, file, j.plan);
  }).catch(function(err){ running(false); status("error: "+err.message); });
}

function stop(ev){
  if(!key||!ev.target.closest||!ev.target.closest("#stop")) return;
  ev.stopImmediatePropagation();
  fetch("/api/research/"+encodeURIComponent(key)+"/stop",{method:"POST",credentials:"same-origin"});
  status("stopping: the report is written from what was found…");
}

// On the document, capturing: before app.js's own listeners on the form and the Stop button.
document.addEventListener("submit",start,true);
document.addEventListener("click",stop,true);
})();
